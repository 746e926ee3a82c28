// The caller's private pool: their own documents and those shared with them, its cap and limits as the
// API reports them, and sharing a document into several users' pools (seed 003, "Specific users").
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { del, errorFromText, get, q, sendWithProgress } from "./api";
import type { Document } from "./types";
import { ConfirmButton, ErrorLine, Field, useLoad } from "./ui";

interface PoolDocument extends Document {
  shared: boolean;
  shared_by: string | null;
}
interface PoolPage {
  documents: PoolDocument[];
  total: number;
  next_offset: number | null;
  limits?: Record<string, number>;
}

const LIMIT_WORDS: Record<string, string> = {
  cap: "Documents a private pool may hold",
  held: "Documents it holds now",
  upload_rate_per_minute: "Documents that may enter it a minute",
  upload_rate_per_day: "Documents that may enter it a day",
  max_recipients: "Users one document may be shared with",
};

export function PoolScreen() {
  const [offset, setOffset] = useState(0);
  const [page, error, reload] = useLoad(() => get<PoolPage>(`/pools/documents${q({ limit: 50, offset })}`), [offset]);
  const [file, setFile] = useState<File | null>(null);
  const [recipients, setRecipients] = useState("");
  const [progress, setProgress] = useState(0);
  const [shareError, setShareError] = useState<unknown>(null);
  const [shared, setShared] = useState("");
  const [actionError, setActionError] = useState<unknown>(null);

  async function share(e: Event) {
    e.preventDefault();
    if (!file) return;
    setShareError(null);
    setShared("");
    const form = new FormData();
    form.append("recipients", recipients);
    form.append("file", file, file.name);
    try {
      const r = await sendWithProgress("/pools/documents", form, setProgress, true);
      if (r.status >= 400) throw errorFromText(r.status, r.text);
      const body = JSON.parse(r.text);
      setShared(`${body.filename} was shared with ${body.recipients.join(", ")}.`);
      reload();
    } catch (err) {
      setShareError(err);
    }
  }

  return (
    <>
      <h1>My private pool</h1>
      <ErrorLine error={error} />
      {page ? (
        <section class="card" aria-labelledby="limits-title">
          <h2 id="limits-title">Cap and limits</h2>
          <dl>
            {Object.entries(page.limits ?? {}).map(([k, v]) => (
              <Fragment key={k}>
                <dt>{LIMIT_WORDS[k] ?? k}</dt>
                <dd>{k.startsWith("upload_rate") && v === 0 ? "no limit" : v}</dd>
              </Fragment>
            ))}
          </dl>
        </section>
      ) : null}
      <ErrorLine error={actionError} />
      {page && page.documents.length === 0 ? <p>No documents in your pool yet.</p> : null}
      {page && page.documents.length ? (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Status</th>
              <th scope="col">Shared</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {page.documents.map((d) => (
              <tr key={d.id}>
                <td>
                  <span>{d.filename}</span>
                  {d.error_message ? <p class="error">{d.error_message}</p> : null}
                </td>
                <td>
                  <span class={`badge ${d.status}`}>{d.status}</span>
                </td>
                <td>{d.shared ? (d.shared_by ? `by ${d.shared_by}` : "yes") : ""}</td>
                <td>
                  <ConfirmButton label="Delete" confirm={`Delete ${d.filename}?`}
                    onConfirm={() => del(`/rag/documents/${encodeURIComponent(d.id)}`).then(reload, setActionError)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {page && (offset > 0 || page.next_offset !== null) ? (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 50))}>
            Previous
          </button>
          <button type="button" disabled={page.next_offset === null} onClick={() => setOffset(page.next_offset ?? 0)}>
            Next
          </button>
        </nav>
      ) : null}
      <form class="card" onSubmit={share} aria-labelledby="share-title">
        <h2 id="share-title">Share a document with specific users</h2>
        <Field label="File">
          <input type="file" name="file" required onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
        </Field>
        <Field label="Recipients" hint="User ids of your organization, separated by commas. All or nothing: one full pool refuses the share.">
          <input name="recipients" required value={recipients} onInput={(e) => setRecipients((e.target as HTMLInputElement).value)} />
        </Field>
        {progress > 0 && progress < 1 ? <progress max={1} value={progress} aria-label="Upload" /> : null}
        <ErrorLine error={shareError} />
        {shared ? <p role="status">{shared}</p> : null}
        <button type="submit" class="primary">
          Share
        </button>
      </form>
    </>
  );
}
