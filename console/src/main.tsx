import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./styles.css";
import {
  claims, finishSignIn, getToken, oidcConfigured, onAuthChange, signInNotice, signOut, startSignIn,
  takeFragmentToken, trySilentSignIn, useToken,
} from "./auth";
import { BasesScreen } from "./bases";
import { DocumentsScreen } from "./documents";
import { SearchScreen } from "./search";
import { SyncScreen, RunScreen } from "./sync";
import { PoolScreen } from "./pool";
import { TeardownScreen } from "./teardown";
import { ErrorLine } from "./ui";

// The fragment's token is taken before anything renders, so it never stays in the address bar; and
// again whenever the fragment changes (the link opened in a tab that already shows the console).
takeFragmentToken();
addEventListener("hashchange", () => takeFragmentToken());

function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, "") || "").split("/").filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read());
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function SignIn() {
  const [pasted, setPasted] = useState("");
  const [error, setError] = useState<unknown>(null);
  return (
    <main id="main" class="signin">
      <h1>Sign in to Sluice</h1>
      <p class="notice" role="status">
        {signInNotice()}
      </p>
      {oidcConfigured() ? (
        <p>
          <button type="button" class="primary" onClick={() => startSignIn().catch(setError)}>
            Sign in with your identity provider
          </button>
        </p>
      ) : null}
      <ErrorLine error={error} />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (pasted.trim()) useToken(pasted);
        }}
      >
        <label class="field">
          <span class="label">Or paste a bearer token</span>
          <textarea
            name="token"
            rows={4}
            value={pasted}
            onInput={(e) => setPasted((e.target as HTMLTextAreaElement).value)}
            placeholder="sluice local token --user alice --perm collections:edit"
          />
        </label>
        <button type="submit">Use this token</button>
      </form>
      <p class="hint">The token stays in this page's memory: a reload forgets it.</p>
    </main>
  );
}

function Shell() {
  const route = useRoute();
  const c = claims();
  let screen;
  const [head, id, sub, subId] = route;
  if (head === "kb" && id && sub === "search") screen = <SearchScreen kbId={id} />;
  else if (head === "kb" && id && sub === "sync") screen = <SyncScreen kbId={id} sourceId={subId} />;
  else if (head === "kb" && id) screen = <DocumentsScreen kbId={id} />;
  else if (head === "runs" && id) screen = <RunScreen runId={id} />;
  else if (head === "teardowns" && id) screen = <TeardownScreen teardownId={id} />;
  else if (head === "pool") screen = <PoolScreen />;
  else screen = <BasesScreen />;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById("main")?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          Sluice
        </a>
        <nav aria-label="Sections">
          <a href="#/">Knowledge bases</a>
          <a href="#/pool">My private pool</a>
        </nav>
        <span class="who">
          <span>{String(c.sub ?? "")}</span>
          {c.org_id ? <span class="muted"> · {String(c.org_id)}</span> : null}
          <button type="button" onClick={() => signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        {screen}
      </main>
    </>
  );
}

function App() {
  const [, setTick] = useState(0);
  const [busy, setBusy] = useState(true);
  useEffect(() => onAuthChange(() => setTick((t) => t + 1)), []);
  useEffect(() => {
    (async () => {
      try {
        if (!(await finishSignIn()) && !getToken()) await trySilentSignIn();
      } catch {
        /* the sign-in screen says what to do */
      }
      setBusy(false);
    })();
  }, []);
  if (busy && !getToken()) return <main id="main" class="signin" aria-busy="true" />;
  return getToken() ? <Shell /> : <SignIn />;
}

render(<App />, document.getElementById("app")!);
