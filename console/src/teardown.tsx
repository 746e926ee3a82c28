// A teardown's receipt: what deleting a base or a collection removed, followed until it finishes.
import { useEffect, useState } from "preact/hooks";
import { get } from "./api";
import type { Teardown } from "./types";
import { ErrorLine, bytes, when } from "./ui";

export function TeardownScreen({ teardownId }: { teardownId: string }) {
  const [t, setT] = useState<Teardown | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    let timer = 0;
    const load = () =>
      get<Teardown>(`/rag/teardowns/${encodeURIComponent(teardownId)}`).then(
        (v) => {
          if (!live) return;
          setT(v);
          if (v.state === "running") timer = window.setTimeout(load, 1000);
        },
        (e) => live && setError(e),
      );
    load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [teardownId]);
  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Knowledge bases</a> <span aria-hidden="true">›</span> <span>Teardown receipt</span>
      </nav>
      <h1>Teardown of {t?.collection_name ?? ""}</h1>
      <ErrorLine error={error} />
      {t ? (
        <section class="card receipt" aria-label="Receipt">
          <p role="status">
            <span class={`badge ${t.state === "done" ? "done" : t.state === "failed" ? "error" : "processing"}`}>{t.state}</span>{" "}
            {t.state === "running" ? `step: ${t.step}` : when(t.finished_at)}
          </p>
          {t.error ? <p class="error">{`${t.error.step}: ${t.error.reason}`}</p> : null}
          <dl>
            <dt>Documents removed</dt>
            <dd>{t.removed.documents}</dd>
            <dt>Chunks removed</dt>
            <dd>{t.removed.chunks}</dd>
            <dt>Stored objects removed</dt>
            <dd>
              {t.removed.objects} ({bytes(t.removed.bytes)})
            </dd>
            <dt>Sync sources removed</dt>
            <dd>{t.removed.sync_sources}</dd>
            <dt>Bases</dt>
            <dd>{t.knowledge_bases.map((b) => b.name).join(", ")}</dd>
          </dl>
        </section>
      ) : null}
    </>
  );
}
