// Knowledge bases: the list, and a new base with its scope, embedding model (the catalog), language,
// chunking and parser settings, each from what the API says it offers.
import { useState } from "preact/hooks";
import { get, post } from "./api";
import type { KnowledgeBase } from "./types";
import { ErrorLine, Field, navigate, useLoad } from "./ui";

interface Catalog {
  models: { provider: string; model: string; dim: number; description: string; is_default: boolean }[];
  default: { provider: string; model: string };
}
interface Languages {
  languages: string[];
  default: string;
}
interface Parsers {
  parsers: string[];
  ocr_modes: string[];
  ocr_available: boolean;
  defaults: Record<string, string | number>;
}

export function BasesScreen() {
  const [bases, error, reload] = useLoad(() => get<{ knowledge_bases: KnowledgeBase[] }>("/kb"), []);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <h1>Knowledge bases</h1>
      <ErrorLine error={error} />
      {bases && bases.knowledge_bases.length === 0 ? <p>No knowledge base yet.</p> : null}
      {bases && bases.knowledge_bases.length ? (
        <table class="list">
          <caption class="sr-only">Knowledge bases you can read</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Scope</th>
              <th scope="col">Collection</th>
              <th scope="col">Embedding</th>
              <th scope="col">Your access</th>
            </tr>
          </thead>
          <tbody>
            {bases.knowledge_bases.map((kb) => (
              <tr key={kb.id}>
                <td>
                  <a href={`#/kb/${kb.id}`}>{kb.name}</a>
                </td>
                <td>{kb.scope}</td>
                <td>{kb.collection_name}</td>
                <td>{kb.embedding_model}</td>
                <td>{kb.can_write ? "write" : "read"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {creating ? (
        <CreateBase onDone={(kb) => (reload(), kb && navigate(`/kb/${kb.id}`))} onCancel={() => setCreating(false)} />
      ) : (
        <p>
          <button type="button" class="primary" onClick={() => setCreating(true)}>
            New knowledge base
          </button>
        </p>
      )}
    </>
  );
}

function CreateBase(props: { onDone: (kb?: KnowledgeBase) => void; onCancel: () => void }) {
  const [catalog] = useLoad(() => get<Catalog>("/rag/embedding-models"), []);
  const [languages] = useLoad(() => get<Languages>("/rag/text-search-languages"), []);
  const [parsers] = useLoad(() => get<Parsers>("/rag/parsers"), []);
  const [form, setForm] = useState<Record<string, string>>({ scope: "personal" });
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const set = (k: string) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });

  async function submit(e: Event) {
    e.preventDefault();
    setSaving(true);
    const ingestion: Record<string, unknown> = {};
    if (form.chunk_size) ingestion.chunk_size = Number(form.chunk_size);
    if (form.chunk_overlap) ingestion.chunk_overlap = Number(form.chunk_overlap);
    if (form.parser || form.ocr) {
      const parser: Record<string, string> = {};
      if (form.parser) parser.name = form.parser;
      if (form.ocr) parser.ocr = form.ocr;
      ingestion.parser = parser;
    }
    const [provider, model] = (form.embedding || "").split("\u001f");
    const body: Record<string, unknown> = { name: form.name ?? "", scope: form.scope };
    if (form.description) body.description = form.description;
    if (form.collection_name) body.collection_name = form.collection_name;
    if (provider && model) Object.assign(body, { embedding_provider: provider, embedding_model: model });
    if (form.language) body.text_search_language = form.language;
    if (Object.keys(ingestion).length) body.ingestion_config = ingestion;
    try {
      props.onDone(await post<KnowledgeBase>("/kb", body));
    } catch (err) {
      setError(err);
    } finally {
      setSaving(false);
    }
  }

  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-base">
      <h2 id="new-base">New knowledge base</h2>
      <Field label="Name">
        <input name="name" required value={form.name ?? ""} onInput={set("name")} />
      </Field>
      <Field label="Scope" hint="personal: yours alone; org: your organization's members; app: everyone">
        <select name="scope" value={form.scope} onChange={set("scope")}>
          <option value="personal">personal</option>
          <option value="org">org</option>
          <option value="app">app</option>
        </select>
      </Field>
      <Field label="Description">
        <input name="description" value={form.description ?? ""} onInput={set("description")} />
      </Field>
      <Field label="Collection name" hint="Leave empty for one of its own.">
        <input name="collection_name" value={form.collection_name ?? ""} onInput={set("collection_name")} />
      </Field>
      <Field label="Embedding model" hint={catalog ? `Default: ${catalog.default.provider} ${catalog.default.model}` : ""}>
        <select name="embedding" value={form.embedding ?? ""} onChange={set("embedding")}>
          <option value="">The deployment's default</option>
          {(catalog?.models ?? []).map((m) => (
            <option key={`${m.provider}/${m.model}`} value={`${m.provider}\u001f${m.model}`}>
              {`${m.provider} · ${m.model} (${m.dim} dimensions)`}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Text search language">
        <select name="language" value={form.language ?? ""} onChange={set("language")}>
          <option value="">{languages ? `Default (${languages.default})` : "Default"}</option>
          {(languages?.languages ?? []).map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </Field>
      <fieldset>
        <legend>Chunking and parsing</legend>
        <Field label="Chunk size (tokens)" hint="Empty: derived from the embedding model's window.">
          <input name="chunk_size" type="number" min={1} value={form.chunk_size ?? ""} onInput={set("chunk_size")} />
        </Field>
        <Field label="Chunk overlap (tokens)">
          <input name="chunk_overlap" type="number" min={0} value={form.chunk_overlap ?? ""} onInput={set("chunk_overlap")} />
        </Field>
        <Field label="Parser">
          <select name="parser" value={form.parser ?? ""} onChange={set("parser")}>
            <option value="">{parsers ? `Default (${parsers.defaults.name ?? parsers.parsers[0]})` : "Default"}</option>
            {(parsers?.parsers ?? []).map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field label="OCR" hint={parsers && !parsers.ocr_available ? "OCR reads nothing in this deployment." : ""}>
          <select name="ocr" value={form.ocr ?? ""} onChange={set("ocr")}>
            <option value="">{parsers ? `Default (${parsers.defaults.ocr ?? "off"})` : "Default"}</option>
            {(parsers?.ocr_modes ?? []).map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </Field>
      </fieldset>
      <ErrorLine error={error} />
      <p class="actions">
        <button type="submit" class="primary" disabled={saving}>
          Create
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </p>
    </form>
  );
}
