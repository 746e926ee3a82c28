// Sign-in (R-UI-1). The token lives in this module's memory only: never localStorage, never a cookie.
// On AWS: OpenID Connect authorization code with PKCE against the deployment's issuer; a reload signs
// in again silently (prompt=none) where the identity provider allows. Locally: the link
// `sluice local up` prints carries a dev token in the URL fragment, taken and cleared at once; or a
// token from `sluice local token`, pasted.

export interface PageConfig {
  issuer: string;
  client_id: string;
  max_upload_bytes: number;
  direct_upload_max_bytes: number;
}

export function pageConfig(): PageConfig {
  const meta = document.querySelector('meta[name="sluice-console"]');
  const fallback = { issuer: "", client_id: "", max_upload_bytes: 50 * 1024 * 1024, direct_upload_max_bytes: 4 * 1024 * 1024 };
  try {
    return { ...fallback, ...JSON.parse(meta?.getAttribute("content") ?? "{}") };
  } catch {
    return fallback;
  }
}

let token = "";
let notice = "";
const listeners = new Set<() => void>();

export const getToken = () => token;
export const signInNotice = () => notice;
export function onAuthChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}
function changed() {
  listeners.forEach((fn) => fn());
}

export function useToken(value: string) {
  token = value.trim().replace(/^Bearer\s+/i, "");
  notice = "";
  changed();
}

export function signOut(why = "") {
  token = "";
  notice = why;
  changed();
}

/** Claims of the token, for display only (the API decides what the user may do). */
export function claims(): Record<string, unknown> {
  try {
    const part = token.split(".")[1] ?? "";
    return JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    return {};
  }
}

/** A token in the fragment (#token=...): taken, and the fragment cleared before anything else runs. */
export function takeFragmentToken(): boolean {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return false;
  history.replaceState(null, "", location.pathname + location.search + "#/");
  useToken(decodeURIComponent(m[1]));
  return true;
}

// --- OpenID Connect, authorization code + PKCE ------------------------------------------------

const PKCE_KEY = "sluice-console-pkce"; // the verifier and state across the redirect, never a token
const SILENT_KEY = "sluice-console-silent";

function b64url(bytes: ArrayBuffer | Uint8Array): string {
  const arr = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = "";
  arr.forEach((b) => (s += String.fromCharCode(b)));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(n = 32): string {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

async function discovery(issuer: string): Promise<Record<string, string>> {
  const resp = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, { credentials: "omit" });
  if (!resp.ok) throw new Error(`The identity provider's discovery document answered ${resp.status}.`);
  return resp.json();
}

export function oidcConfigured(): boolean {
  const c = pageConfig();
  return Boolean(c.issuer && c.client_id);
}

function redirectUri(): string {
  return `${location.origin}${location.pathname}`;
}

export async function startSignIn(silent = false): Promise<void> {
  const c = pageConfig();
  const d = await discovery(c.issuer);
  const verifier = random(48);
  const state = random(16);
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, route: location.hash || "#/" }));
  const params = new URLSearchParams({
    response_type: "code", client_id: c.client_id, redirect_uri: redirectUri(), scope: "openid",
    code_challenge: challenge, code_challenge_method: "S256", state,
  });
  if (silent) params.set("prompt", "none");
  location.assign(`${d.authorization_endpoint}?${params}`);
}

/** Back from the identity provider: the code exchanged for a token, the query cleared. */
export async function finishSignIn(): Promise<boolean> {
  const params = new URLSearchParams(location.search);
  if (!params.has("code") && !params.has("error")) return false;
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? "null");
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", location.pathname + (saved?.route ?? "#/"));
  if (params.has("error")) {
    if (params.get("error") !== "login_required" && params.get("error") !== "interaction_required") {
      notice = params.get("error_description") || `The identity provider refused the sign-in (${params.get("error")}).`;
    }
    changed();
    return true;
  }
  if (!saved || saved.state !== params.get("state")) {
    notice = "The sign-in answer did not match this page's request: sign in again.";
    changed();
    return true;
  }
  const c = pageConfig();
  const d = await discovery(c.issuer);
  const resp = await fetch(d.token_endpoint, {
    method: "POST",
    credentials: "omit",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code: params.get("code") ?? "", redirect_uri: redirectUri(),
      client_id: c.client_id, code_verifier: saved.verifier,
    }),
  });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok || !(body.access_token || body.id_token)) {
    notice = body.error_description || `The identity provider did not issue a token (${resp.status}).`;
    changed();
    return true;
  }
  useToken(body.access_token || body.id_token);
  sessionStorage.removeItem(SILENT_KEY); // the next reload may sign in silently again
  return true;
}

/** On a fresh load: one silent attempt per tab session, so a reload signs in again without a click. */
export async function trySilentSignIn(): Promise<void> {
  if (!oidcConfigured() || sessionStorage.getItem(SILENT_KEY)) return;
  sessionStorage.setItem(SILENT_KEY, "1");
  await startSignIn(true);
}
