// A base's documents: status, stage with n/m progress (polled while anything is in flight), the error
// sentence, notes, preview, retry, delete; paginated and filtered by status on the server, so a base
// of 100,000 documents opens with one page of 50. Writers drop files anywhere on the page.
import { useEffect, useRef, useState } from "preact/hooks";
import { del, get, post, q, sentence } from "./api";
import { pageConfig } from "./auth";
import type { Counts, Document, KnowledgeBase, Page, Teardown } from "./types";
import { ConfirmButton, ErrorLine, bytes, navigate, useLoad, when } from "./ui";
import { LONG_PASTE_CHARS, UploadState, carriesFiles, mb, pastedFile, uploadFile } from "./upload";

const PAGE = 50;
const POLL_MS = 1500;
const STATUSES: [string, string, keyof Counts][] = [
  ["", "All", "document_count"],
  ["processing", "In progress", "processing_count"],
  ["done", "Indexed", "indexed_count"],
  ["error", "Failed", "failed_count"],
];

export function DocumentsScreen({ kbId }: { kbId: string }) {
  const [kb, kbError] = useLoad(() => get<KnowledgeBase>(`/kb/${encodeURIComponent(kbId)}`), [kbId]);
  const [status, setStatus] = useState("");
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<Page<Document> | null>(null);
  const [counts, setCounts] = useState<Counts | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [uploads, setUploads] = useState<UploadState[]>([]);
  const [tick, setTick] = useState(0);
  const [actionError, setActionError] = useState<unknown>(null);
  const reload = () => setTick((t) => t + 1);

  useEffect(() => {
    let live = true;
    const base = `/kb/${encodeURIComponent(kbId)}`;
    Promise.all([
      get<Page<Document>>(`${base}/documents${q({ limit: PAGE, offset, status })}`),
      get<Counts>(`${base}/ingestion`),
    ]).then(
      ([p, c]) => live && (setPage(p), setCounts(c), setError(null)),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [kbId, status, offset, tick]);

  // Live progress: poll the one page shown while any of it (or an upload) is still moving.
  const moving = (page?.documents ?? []).some((d) => d.status === "processing") || uploads.some((u) => u.state === "sending");
  useEffect(() => {
    if (!moving) return;
    const t = setTimeout(reload, POLL_MS);
    return () => clearTimeout(t);
  }, [moving, page]);

  const writable = Boolean(kb?.can_write);
  const nextKey = useRef(1);

  function addFiles(files: File[]) {
    const config = pageConfig();
    for (const file of files) {
      const key = nextKey.current++;
      const update = (patch: Partial<UploadState>) =>
        setUploads((list) => list.map((u) => (u.key === key ? { ...u, ...patch } : u)));
      setUploads((list) => [...list, { key, name: file.name, size: file.size, progress: 0, state: "sending", message: "" }]);
      uploadFile(kbId, file, config, (p) => update({ progress: p })).then(
        () => (update({ state: "accepted", progress: 1, message: "Accepted" }), reload()),
        (e) => update({ state: "failed", message: sentence(e) }),
      );
    }
  }

  async function act(work: () => Promise<unknown>) {
    setActionError(null);
    try {
      await work();
      reload();
    } catch (e) {
      setActionError(e);
    }
  }

  async function teardown(path: string) {
    try {
      const t = await del<Teardown>(path);
      navigate(`/teardowns/${t.id}`);
    } catch (e) {
      setActionError(e);
    }
  }

  if (kbError) return <ErrorLine error={kbError} />;
  const total = page?.total ?? 0;
  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Knowledge bases</a> <span aria-hidden="true">›</span> <span>{kb?.name ?? ""}</span>
      </nav>
      <h1>{kb?.name ?? "Knowledge base"}</h1>
      {kb ? (
        <p class="meta">
          <span>{kb.scope}</span> · <span>collection {kb.collection_name}</span> · <span>{kb.embedding_model}</span> ·{" "}
          <span>{writable ? "you may write" : "read only"}</span>
        </p>
      ) : null}
      <nav class="tabs" aria-label="This base">
        <a href={`#/kb/${kbId}`} aria-current="page">
          Documents
        </a>
        <a href={`#/kb/${kbId}/search`}>Search</a>
        {writable ? <a href={`#/kb/${kbId}/sync`}>Sync sources</a> : null}
      </nav>

      {writable ? <Uploader onFiles={addFiles} uploads={uploads} /> : null}

      <div class="filters" role="group" aria-label="Filter by status">
        {STATUSES.map(([value, label, countKey]) => (
          <button
            key={value}
            type="button"
            aria-pressed={status === value}
            onClick={() => (setStatus(value), setOffset(0))}
          >
            {label} {counts ? <span class="count">{counts[countKey]}</span> : null}
          </button>
        ))}
      </div>
      <ErrorLine error={error} />
      <ErrorLine error={actionError} />
      {page ? (
        <>
          <table class="list documents">
            <caption class="sr-only">Documents of this base</caption>
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">Status</th>
                <th scope="col">Stage</th>
                <th scope="col">Chunks</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {page.documents.map((d) => (
                <DocumentRow key={d.id} doc={d} writable={writable} act={act} />
              ))}
            </tbody>
          </table>
          {page.documents.length === 0 ? <p>No documents{status ? " with this status" : ""}.</p> : null}
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Previous
            </button>
            <span>
              {total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total.toLocaleString()}` : "0 documents"}
            </span>
            <button type="button" disabled={page.next_offset === null} onClick={() => setOffset(page.next_offset ?? 0)}>
              Next
            </button>
          </nav>
        </>
      ) : (
        <p aria-busy="true">Loading…</p>
      )}

      {kb && writable ? (
        <section class="danger-zone" aria-labelledby="danger">
          <h2 id="danger">Delete</h2>
          <p>
            <ConfirmButton
              danger
              label="Delete this knowledge base"
              confirm={`Delete ${kb.name} and every document in it?`}
              onConfirm={() => teardown(`/kb/${encodeURIComponent(kb.id)}`)}
            />{" "}
            <ConfirmButton
              danger
              label="Delete the whole collection"
              confirm={`Delete every base on the collection ${kb.collection_name}?`}
              onConfirm={() => teardown(`/rag/collections/${encodeURIComponent(kb.collection_name)}`)}
            />
          </p>
        </section>
      ) : null}
    </>
  );
}

function DocumentRow(props: { doc: Document; writable: boolean; act: (w: () => Promise<unknown>) => void }) {
  const d = props.doc;
  const [preview, setPreview] = useState<string | null>(null);
  const [previewError, setPreviewError] = useState<unknown>(null);
  // The steps of the stage it is in: only while it moves (a finished document keeps its last count).
  const progress = d.status === "processing" ? d.progress : null;
  const stage = progress ? `${d.stage} ${progress.done}/${progress.total}` : d.stage;
  const notes = [...d.notes];
  if (d.ocr_pages) notes.push(`OCR read ${d.ocr_pages} page${d.ocr_pages === 1 ? "" : "s"}`);
  async function togglePreview() {
    if (preview !== null) return setPreview(null);
    try {
      const c = await get<{ content: string }>(`/rag/documents/${encodeURIComponent(d.id)}/content`);
      setPreview(c.content);
      setPreviewError(null);
    } catch (e) {
      setPreviewError(e);
    }
  }
  return (
    <>
      <tr class={`doc status-${d.status}`} data-status={d.status}>
        <td class="filename">
          <span>{d.filename}</span>
          <span class="muted"> {bytes(d.filesize)}</span>
          {d.error_message ? <p class="error">{d.error_message}</p> : null}
          {notes.length ? (
            <ul class="notes">
              {notes.map((n, i) => (
                <li key={i}>{n}</li>
              ))}
            </ul>
          ) : null}
        </td>
        <td>
          <span class={`badge ${d.status}`}>{d.status}</span>
        </td>
        <td class="stage">
          <span>{stage}</span>
          {progress ? <progress max={progress.total} value={progress.done} aria-label={`${d.filename}: ${stage}`} /> : null}
        </td>
        <td>{d.chunk_count}</td>
        <td>{when(d.created_at)}</td>
        <td class="actions">
          {d.status === "done" ? (
            <button type="button" onClick={togglePreview} aria-expanded={preview !== null}>
              Preview
            </button>
          ) : null}
          {props.writable && d.status === "error" && d.has_file ? (
            <button type="button" onClick={() => props.act(() => post(`/rag/documents/${encodeURIComponent(d.id)}/retry`))}>
              Retry
            </button>
          ) : null}
          {props.writable ? (
            <ConfirmButton
              label="Delete"
              confirm={`Delete ${d.filename}?`}
              onConfirm={() => props.act(() => del(`/rag/documents/${encodeURIComponent(d.id)}`))}
            />
          ) : null}
        </td>
      </tr>
      {preview !== null || previewError ? (
        <tr class="preview">
          <td colSpan={6}>
            <ErrorLine error={previewError} />
            {preview !== null ? <pre tabIndex={0} aria-label={`Text of ${d.filename}`}>{preview}</pre> : null}
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** Files dropped anywhere on the page, chosen, or pasted as long text. The overlay names the limit. */
function Uploader(props: { onFiles: (files: File[]) => void; uploads: UploadState[] }) {
  const [over, setOver] = useState(false);
  const depth = useRef(0);
  const onFiles = useRef(props.onFiles);
  onFiles.current = props.onFiles;
  const config = pageConfig();
  useEffect(() => {
    const enter = (e: DragEvent) => {
      if (!carriesFiles(e)) return; // text or a link: left to the browser
      e.preventDefault();
      depth.current += 1;
      setOver(true);
    };
    const overFn = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
    };
    const leave = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      depth.current = Math.max(0, depth.current - 1);
      if (depth.current === 0) setOver(false);
    };
    const drop = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      depth.current = 0;
      setOver(false);
      const files = Array.from(e.dataTransfer?.files ?? []);
      if (files.length) onFiles.current(files);
    };
    const paste = (e: ClipboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (target && (target.closest("input, textarea, [contenteditable]"))) return;
      const files = Array.from(e.clipboardData?.files ?? []);
      if (files.length) {
        e.preventDefault();
        return onFiles.current(files);
      }
      const text = e.clipboardData?.getData("text/plain") ?? "";
      if (text.length >= LONG_PASTE_CHARS) {
        e.preventDefault();
        onFiles.current([pastedFile(text)]);
      }
    };
    addEventListener("dragenter", enter);
    addEventListener("dragover", overFn);
    addEventListener("dragleave", leave);
    addEventListener("drop", drop);
    addEventListener("paste", paste);
    return () => {
      removeEventListener("dragenter", enter);
      removeEventListener("dragover", overFn);
      removeEventListener("dragleave", leave);
      removeEventListener("drop", drop);
      removeEventListener("paste", paste);
    };
  }, []);
  return (
    <section class="upload" aria-labelledby="upload-title">
      <h2 id="upload-title" class="sr-only">
        Add documents
      </h2>
      <p>
        Drop files anywhere on this page, paste a long text, or{" "}
        <label class="filepick">
          <span>choose files</span>
          <input
            type="file"
            multiple
            onChange={(e) => {
              const input = e.target as HTMLInputElement;
              props.onFiles(Array.from(input.files ?? []));
              input.value = "";
            }}
          />
        </label>
        . Up to {mb(config.max_upload_bytes)} each.
      </p>
      {over ? (
        <div class="overlay" role="status" aria-live="assertive">
          <p>
            Drop to upload. Each file may be up to <strong>{mb(config.max_upload_bytes)}</strong>.
          </p>
        </div>
      ) : null}
      {props.uploads.length ? (
        <ul class="uploads" aria-label="Uploads">
          {props.uploads.map((u) => (
            <li key={u.key} class={u.state} data-state={u.state}>
              <span class="name">{u.name}</span>
              <progress max={1} value={u.progress} aria-label={`Upload of ${u.name}`} />
              <span class={u.state === "failed" ? "error" : "muted"}>{u.message}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
