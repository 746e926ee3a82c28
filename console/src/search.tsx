// Search a base's collection, and the diagnostic view (R-SRCH-4): every candidate with its raw and
// normalised scores, which side found it, and which gate let it through or stopped it; alpha and
// min_vec_score to play with.
import { useState } from "preact/hooks";
import { get, post } from "./api";
import type { Candidate, KnowledgeBase, SearchResult } from "./types";
import { ErrorLine, useLoad } from "./ui";

interface Diagnostic {
  alpha: number;
  vec_gate: number | null;
  reranker_gate: number;
  candidates: Candidate[];
  count: number;
}

const f3 = (n: number | null | undefined) => (n === null || n === undefined ? "–" : n.toFixed(3));

export function SearchScreen({ kbId }: { kbId: string }) {
  const [kb, kbError] = useLoad(() => get<KnowledgeBase>(`/kb/${encodeURIComponent(kbId)}`), [kbId]);
  const [query, setQuery] = useState("");
  const [alpha, setAlpha] = useState("");
  const [minVec, setMinVec] = useState("");
  const [diagnostic, setDiagnostic] = useState(false);
  const [results, setResults] = useState<SearchResult[] | null>(null);
  const [diag, setDiag] = useState<Diagnostic | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function run(e: Event) {
    e.preventDefault();
    if (!kb) return;
    setBusy(true);
    setError(null);
    const body: Record<string, unknown> = { query, collections: [kb.collection_name] };
    if (alpha !== "") body.alpha = Number(alpha);
    if (minVec !== "") body.min_vec_score = Number(minVec);
    try {
      if (diagnostic) {
        setDiag(await post<Diagnostic>("/rag/search/diagnostic", body));
        setResults(null);
      } else {
        setResults((await post<{ results: SearchResult[] }>("/rag/search", body)).results);
        setDiag(null);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  if (kbError) return <ErrorLine error={kbError} />;
  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Knowledge bases</a> <span aria-hidden="true">›</span> <a href={`#/kb/${kbId}`}>{kb?.name ?? ""}</a>{" "}
        <span aria-hidden="true">›</span> <span>Search</span>
      </nav>
      <h1>Search {kb?.name ?? ""}</h1>
      <form class="card search" onSubmit={run} aria-label="Search">
        <label class="field wide">
          <span class="label">Query</span>
          <input name="query" type="search" required value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span class="label">alpha (0: text only, 1: vectors only)</span>
          <input name="alpha" type="number" min={0} max={1} step={0.05} placeholder="default" value={alpha}
            onInput={(e) => setAlpha((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span class="label">min_vec_score (the cosine gate)</span>
          <input name="min_vec_score" type="number" min={-1} max={1} step={0.05} placeholder="the model's gate" value={minVec}
            onInput={(e) => setMinVec((e.target as HTMLInputElement).value)} />
        </label>
        <label class="check">
          <input name="diagnostic" type="checkbox" checked={diagnostic} onChange={(e) => setDiagnostic((e.target as HTMLInputElement).checked)} />
          <span>Diagnostic: every candidate, its scores and its gate</span>
        </label>
        <button type="submit" class="primary" disabled={busy || !kb}>
          Search
        </button>
      </form>
      <ErrorLine error={error} />
      {results ? (
        <ol class="results" aria-label="Results">
          {results.length === 0 ? <li>Nothing passed the gates.</li> : null}
          {results.map((r, i) => (
            <li key={i} class="result">
              <p class="muted">
                <span>{r.filename ?? ""}</span> · chunk {r.chunk_index}
                {r.page_start ? ` · page ${r.page_start}` : ""} · score {f3(r.score)} (vector {f3(r.vec_score)}, text{" "}
                {f3(r.text_score)})
              </p>
              <p class="content">{r.content}</p>
            </li>
          ))}
        </ol>
      ) : null}
      {diag ? (
        <section aria-labelledby="diag-title">
          <h2 id="diag-title">Diagnostic</h2>
          <p class="meta">
            alpha {f3(diag.alpha)} · cosine gate {f3(diag.vec_gate)} · reranker gate {f3(diag.reranker_gate)} · {diag.count}{" "}
            candidates
          </p>
          <div class="scroll" tabIndex={0} role="region" aria-label="Candidates">
            <table class="list diagnostic">
              <thead>
                <tr>
                  <th scope="col">Verdict</th>
                  <th scope="col">Gate</th>
                  <th scope="col">Found by</th>
                  <th scope="col">Vector (raw / norm)</th>
                  <th scope="col">Text (raw / norm)</th>
                  <th scope="col">Hybrid</th>
                  <th scope="col">Reranker</th>
                  <th scope="col">Chunk</th>
                </tr>
              </thead>
              <tbody>
                {diag.candidates.map((c, i) => (
                  <tr key={i} class={c.passed ? "passed" : "stopped"}>
                    <td>
                      <span class={`badge ${c.passed ? "done" : "error"}`}>{c.passed ? "passed" : "stopped"}</span>
                    </td>
                    <td>{c.gate}</td>
                    <td>{c.found_by.join(", ")}</td>
                    <td>
                      {f3(c.vec_score)} / {f3(c.vec_norm)}
                    </td>
                    <td>
                      {f3(c.text_score)} / {f3(c.text_norm)}
                    </td>
                    <td>{f3(c.hybrid_score)}</td>
                    <td>{f3(c.reranker_score)}</td>
                    <td class="content clamp">
                      <span class="muted">
                        {c.filename ?? ""} #{c.chunk_index}
                      </span>
                      <span> {c.content}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      ) : null}
    </>
  );
}
