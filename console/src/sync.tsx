// Sync sources of a base: the list; a new source whose config form is drawn from its connector's
// schema, with the sentence saying who will read what it ingests (R-SYNC-8) shown before saving;
// run now, the run history, the per-file report with reasons, and retry failed.
import { useEffect, useState } from "preact/hooks";
import { ApiError, get, post, q } from "./api";
import { SchemaForm, initialValues, toConfig } from "./schemaform";
import type { Connector, KnowledgeBase, SyncFile, SyncRun, SyncSource } from "./types";
import { ErrorLine, Field, navigate, useLoad, when } from "./ui";

export function SyncScreen({ kbId, sourceId }: { kbId: string; sourceId?: string }) {
  const base = `/kb/${encodeURIComponent(kbId)}`;
  const [kb, kbError] = useLoad(() => get<KnowledgeBase>(base), [kbId]);
  const [sources, error, reload] = useLoad(() => get<{ sources: SyncSource[] }>(`${base}/sync-sources`), [kbId]);
  const [adding, setAdding] = useState(false);
  if (kbError) return <ErrorLine error={kbError} />;
  const writable = Boolean(kb?.can_write);
  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Knowledge bases</a> <span aria-hidden="true">›</span> <a href={`#/kb/${kbId}`}>{kb?.name ?? ""}</a>{" "}
        <span aria-hidden="true">›</span> <span>Sync sources</span>
      </nav>
      <h1>Sync sources of {kb?.name ?? ""}</h1>
      <ErrorLine error={error} />
      {sources && sources.sources.length === 0 ? <p>No sync source yet.</p> : null}
      {sources ? (
        <ul class="sources">
          {sources.sources.map((s) => (
            <li key={s.id} class={s.id === sourceId ? "current" : ""}>
              <a href={`#/kb/${kbId}/sync/${s.id}`}>{s.name}</a>{" "}
              <span class="muted">
                {s.connector} · {s.sync_mode}
                {s.schedule ? ` · ${s.schedule}` : ""}
              </span>
            </li>
          ))}
        </ul>
      ) : null}
      {sourceId ? <SourceRuns kbId={kbId} sourceId={sourceId} writable={writable} /> : null}
      {writable && !adding ? (
        <p>
          <button type="button" class="primary" onClick={() => setAdding(true)}>
            New sync source
          </button>
        </p>
      ) : null}
      {writable && adding ? (
        <NewSource kbId={kbId} onCancel={() => setAdding(false)}
          onSaved={(s) => (setAdding(false), reload(), navigate(`/kb/${kbId}/sync/${s.id}`))} />
      ) : null}
    </>
  );
}

/** The preview's sentence (R-SYNC-8); an API without the preview route shows nothing. */
function previewSentence(body: Record<string, unknown>): string {
  for (const k of ["sentence", "audience_sentence", "message"]) if (typeof body[k] === "string") return body[k] as string;
  return "";
}

function NewSource(props: { kbId: string; onCancel: () => void; onSaved: (s: SyncSource) => void }) {
  const [connectors, connError] = useLoad(() => get<{ connectors: Connector[] }>("/rag/sync/connectors"), []);
  const [name, setName] = useState("");
  const [connectorName, setConnectorName] = useState("");
  const [values, setValues] = useState<Record<string, string>>({});
  const [mode, setMode] = useState("full");
  const [schedule, setSchedule] = useState("");
  const [secret, setSecret] = useState("");
  const [audience, setAudience] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const connector = connectors?.connectors.find((c) => c.connector === connectorName) ?? connectors?.connectors[0];
  useEffect(() => {
    if (connector) setValues(initialValues(connector.config_schema));
    setAudience(null);
  }, [connector?.connector]);
  const fields = error instanceof ApiError ? error.fields : {};

  function body(): Record<string, unknown> {
    const b: Record<string, unknown> = {
      name, connector: connector?.connector, config: connector ? toConfig(connector.config_schema, values) : {}, sync_mode: mode,
    };
    if (schedule.trim()) b.schedule = schedule.trim();
    if (secret.trim()) b.secret_id = secret.trim();
    return b;
  }

  async function check(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const answer = await post<Record<string, unknown>>(`/kb/${encodeURIComponent(props.kbId)}/sync-sources/preview`, body());
      setAudience(previewSentence(answer));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setAudience(""); // no preview route here: nothing to show
      else setError(err);
    }
  }

  async function save() {
    setError(null);
    try {
      props.onSaved(await post<SyncSource>(`/kb/${encodeURIComponent(props.kbId)}/sync-sources`, body()));
    } catch (err) {
      setError(err);
    }
  }

  const change = (fn: (v: string) => void) => (e: Event) => (fn((e.target as HTMLInputElement).value), setAudience(null));
  return (
    <form class="card" onSubmit={check} aria-labelledby="new-source">
      <h2 id="new-source">New sync source</h2>
      <ErrorLine error={connError} />
      <Field label="Name">
        <input name="name" required value={name} onInput={change(setName)} />
      </Field>
      <Field label="Connector" hint={connector ? `Changes are noticed by ${connector.change_signal}.` : ""}>
        <select name="connector" value={connector?.connector ?? ""} onChange={change(setConnectorName)}>
          {(connectors?.connectors ?? []).map((c) => (
            <option key={c.connector} value={c.connector}>
              {c.title}
            </option>
          ))}
        </select>
      </Field>
      {connector ? (
        <fieldset>
          <legend>{connector.title}</legend>
          <SchemaForm schema={connector.config_schema} values={values} prefix="config" errors={fields}
            onChange={(v) => (setValues(v), setAudience(null))} />
        </fieldset>
      ) : null}
      {connector?.secret_kind ? (
        <Field label="Credential (secret id)" hint={`A vault secret tagged sluice:provider=${connector.secret_kind}.`}>
          <input name="secret_id" value={secret} onInput={change(setSecret)} />
        </Field>
      ) : null}
      <Field label="Mode">
        <select name="sync_mode" value={mode} onChange={change(setMode)}>
          <option value="full">full: add, update and remove</option>
          <option value="new_only">new_only: add new files</option>
          <option value="update_only">update_only: add and update</option>
        </select>
      </Field>
      <Field label="Schedule" hint="Empty: runs only when started. e.g. rate(1 day)">
        <input name="schedule" value={schedule} onInput={change(setSchedule)} />
      </Field>
      <ErrorLine error={error} />
      {audience ? (
        <p class="audience" role="status">
          {audience}
        </p>
      ) : null}
      <p class="actions">
        {audience === null ? (
          <button type="submit" class="primary">
            Review
          </button>
        ) : (
          <button type="button" class="primary" onClick={save}>
            Save this source
          </button>
        )}
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </p>
    </form>
  );
}

function SourceRuns(props: { kbId: string; sourceId: string; writable: boolean }) {
  const path = `/kb/${encodeURIComponent(props.kbId)}/sync-sources/${encodeURIComponent(props.sourceId)}`;
  const [runs, error, reload] = useLoad(() => get<{ runs: SyncRun[] }>(`${path}/logs${q({ limit: 20 })}`), [path]);
  const [actionError, setActionError] = useState<unknown>(null);
  const running = (runs?.runs ?? []).some((r) => r.status === "running" || r.status === "queued");
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(reload, 1500);
    return () => clearTimeout(t);
  }, [running, runs]);
  async function runNow() {
    setActionError(null);
    try {
      await post(`${path}/run`);
      reload();
    } catch (e) {
      setActionError(e);
    }
  }
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      {props.writable ? (
        <p>
          <button type="button" onClick={runNow}>
            Run now
          </button>
        </p>
      ) : null}
      <ErrorLine error={error} />
      <ErrorLine error={actionError} />
      {runs ? (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Listed</th>
              <th scope="col">New</th>
              <th scope="col">Updated</th>
              <th scope="col">Ignored</th>
              <th scope="col">Failed</th>
              <th scope="col">Removed</th>
              <th scope="col">Why it failed</th>
            </tr>
          </thead>
          <tbody>
            {runs.runs.map((r) => (
              <tr key={r.id}>
                <td>
                  <a href={`#/runs/${r.id}`}>{when(r.created_at) || r.id}</a> <span class="muted">{r.trigger}</span>
                </td>
                <td>{r.status}</td>
                <td>{r.counts.listed}</td>
                <td>{r.counts.new}</td>
                <td>{r.counts.updated}</td>
                <td>{r.counts.ignored}</td>
                <td>{r.counts.failed}</td>
                <td>{r.counts.removed}</td>
                <td>{r.error ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** A run's per-file report with reasons, and retry of the files it failed. */
export function RunScreen({ runId }: { runId: string }) {
  const [outcome, setOutcome] = useState("");
  const [offset, setOffset] = useState(0);
  const [run] = useLoad(() => get<SyncRun & { kb_id: string; source_id: string }>(`/rag/sync/logs/${encodeURIComponent(runId)}`), [runId]);
  const [files, error] = useLoad(
    () => get<{ files: SyncFile[]; total: number; next_offset: number | null; note: string | null }>(
      `/rag/sync/logs/${encodeURIComponent(runId)}/files${q({ limit: 100, offset, outcome })}`),
    [runId, outcome, offset],
  );
  const [kb] = useLoad(() => (run ? get<KnowledgeBase>(`/kb/${encodeURIComponent(run.kb_id)}`) : Promise.resolve(undefined)), [run?.kb_id]);
  const [retryError, setRetryError] = useState<unknown>(null);
  async function retry() {
    try {
      await post(`/rag/sync/logs/${encodeURIComponent(runId)}/retry-failed`);
      if (run) navigate(`/kb/${run.kb_id}/sync/${run.source_id}`);
    } catch (e) {
      setRetryError(e);
    }
  }
  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Knowledge bases</a>
        {run ? (
          <>
            {" "}
            <span aria-hidden="true">›</span> <a href={`#/kb/${run.kb_id}/sync/${run.source_id}`}>Sync source</a>
          </>
        ) : null}{" "}
        <span aria-hidden="true">›</span> <span>Run</span>
      </nav>
      <h1>Run {run ? when(run.created_at) : ""}</h1>
      {run ? (
        <p class="meta">
          {run.status} · {Object.entries(run.counts).map(([k, v]) => `${k} ${v}`).join(", ")}
        </p>
      ) : null}
      {run?.error ? <p class="error">{run.error}</p> : null}
      {kb?.can_write && run && run.counts.failed > 0 ? (
        <p>
          <button type="button" onClick={retry}>
            Retry the failed files
          </button>
        </p>
      ) : null}
      <ErrorLine error={retryError} />
      <Field label="Outcome">
        <select name="outcome" value={outcome} onChange={(e) => (setOutcome((e.target as HTMLSelectElement).value), setOffset(0))}>
          <option value="">all</option>
          {["new", "updated", "unchanged", "ignored", "failed", "removed"].map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      </Field>
      <ErrorLine error={error} />
      {files?.note ? <p class="muted">{files.note}</p> : null}
      {files ? (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Outcome</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {files.files.map((f) => (
              <tr key={f.seq}>
                <td>{f.source_path}</td>
                <td>{f.outcome ?? (f.indexing ? "indexing" : "undecided")}</td>
                <td>{f.reason ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {files && (offset > 0 || files.next_offset !== null) ? (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 100))}>
            Previous
          </button>
          <span>{`${offset + 1}–${offset + files.files.length} of ${files.total}`}</span>
          <button type="button" disabled={files.next_offset === null} onClick={() => setOffset(files.next_offset ?? 0)}>
            Next
          </button>
        </nav>
      ) : null}
    </>
  );
}
