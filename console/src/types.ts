// The shapes the console reads, as infra/openapi.json describes them (only the fields it uses).

export interface KnowledgeBase {
  id: string;
  name: string;
  collection_name: string;
  scope: "personal" | "org" | "app";
  org_id: string | null;
  owner_id: string | null;
  is_default: boolean;
  description: string;
  embedding_provider: string;
  embedding_model: string;
  embedding_dim: number;
  text_search_language: string;
  ingestion_config: Record<string, unknown>;
  can_write: boolean;
}

export interface Progress {
  done: number;
  total: number;
}

export interface Document {
  id: string;
  kb_id: string | null;
  collection_name: string;
  filename: string;
  filesize: number | null;
  filetype: string | null;
  status: "processing" | "done" | "error";
  stage: string;
  progress: Progress | null;
  error_message: string | null;
  chunk_count: number;
  has_file: boolean;
  attempt: number;
  source: string;
  notes: string[];
  parser: string | null;
  ocr_pages: number | null;
  created_at: string | null;
}

export interface Page<T> {
  total: number;
  limit: number;
  offset: number;
  next_offset: number | null;
  documents: T[];
}

export interface Counts {
  indexing_status: string;
  processing_count: number;
  indexed_count: number;
  failed_count: number;
  document_count: number;
  chunk_count: number;
}

export interface Teardown {
  id: string;
  collection_name: string;
  state: "running" | "done" | "failed";
  step: string;
  knowledge_bases: { id: string; name: string }[];
  error: { step: string; reason: string } | null;
  removed: { documents: number; chunks: number; objects: number; bytes: number; sync_sources: number };
  finished_at: string | null;
}

export interface Candidate {
  content: string;
  filename: string | null;
  chunk_index: number;
  page_start: number | null;
  vec_score: number;
  vec_norm: number;
  text_score: number;
  text_norm: number;
  hybrid_score: number;
  reranker_score: number | null;
  score: number;
  found_by: string[];
  strong_lexical_match: boolean;
  vec_gate: number;
  passed: boolean;
  gate: string;
}

export interface SearchResult {
  content: string;
  score: number;
  vec_score: number;
  text_score: number;
  filename: string | null;
  chunk_index: number;
  page_start: number | null;
}

export interface Connector {
  connector: string;
  title: string;
  secret_kind: string | null;
  config_schema: JsonSchema;
  change_signal: string;
}

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  const?: unknown;
}

export interface SyncSource {
  id: string;
  kb_id: string;
  name: string;
  connector: string;
  config: Record<string, unknown>;
  sync_mode: string;
  schedule: string | null;
  created_at: string | null;
}

export interface SyncRun {
  id: string;
  status: string;
  trigger: string;
  counts: Record<string, number>;
  error: string | null;
  created_at: string | null;
  finished_at: string | null;
  retry_of: string | null;
}

export interface SyncFile {
  seq: number;
  source_path: string;
  name: string;
  outcome: string | null;
  indexing: boolean;
  reason: string | null;
}
