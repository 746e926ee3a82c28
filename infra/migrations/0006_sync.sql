-- Source syncs (issue 14, SPEC §10): sources, their runs and what each run did per file, which
-- source claims which document, and who changed a source.

-- A source feeds exactly one base (R-SYNC-1). `config` says where the documents are (validated by
-- the connector's model, never a credential); `secret_id` names the Secrets Manager secret it
-- reads with. `schedule` is a rate(...) expression, or NULL for runs started by hand only.
CREATE TABLE sync_sources (
    id                  uuid PRIMARY KEY,
    kb_id               uuid        NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    name                text        NOT NULL,
    connector           text        NOT NULL,
    config              jsonb       NOT NULL,
    secret_id           text,
    sync_mode           text        NOT NULL DEFAULT 'new_only'
                                    CHECK (sync_mode IN ('new_only', 'update_only', 'full')),
    organizational_unit text,
    schedule            text,
    created_by          text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sync_sources_kb_idx ON sync_sources (kb_id, created_at);
CREATE INDEX sync_sources_scheduled_idx ON sync_sources (id) WHERE schedule IS NOT NULL;

-- One run of a source (R-SYNC-2): written before its Step Functions execution starts. The base
-- and collection are the ones the run wrote to: a source repointed later keeps its runs' history.
CREATE TABLE sync_logs (
    id               uuid PRIMARY KEY,
    source_id        uuid        NOT NULL REFERENCES sync_sources (id) ON DELETE CASCADE,
    kb_id            uuid        NOT NULL,
    collection_name  text        NOT NULL,
    connector        text        NOT NULL,
    sync_mode        text        NOT NULL,
    trigger          text        NOT NULL CHECK (trigger IN ('manual', 'schedule', 'retry')),
    retry_of         uuid,
    status           text        NOT NULL DEFAULT 'queued'
                                 CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    execution_arn    text,
    listing_complete boolean,
    files_listed     integer     NOT NULL DEFAULT 0,
    files_new        integer     NOT NULL DEFAULT 0,
    files_updated    integer     NOT NULL DEFAULT 0,
    files_unchanged  integer     NOT NULL DEFAULT 0,
    files_ignored    integer     NOT NULL DEFAULT 0,
    files_failed     integer     NOT NULL DEFAULT 0,
    files_removed    integer     NOT NULL DEFAULT 0,
    error            text,
    started_by       text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX sync_logs_source_idx ON sync_logs (source_id, created_at DESC, id);
-- One run at a time per source: a second start conflicts here and is answered 409.
CREATE UNIQUE INDEX sync_logs_one_active_idx ON sync_logs (source_id) WHERE status IN ('queued', 'running');

-- Every file a run listed and what became of it. `outcome` is NULL until the file is decided;
-- `pending` while the ordinary pipeline is still indexing what the run handed it. Paths are
-- compared by a digest (and then themselves): an address is unbounded, and a btree over it has a row-size limit.
CREATE TABLE sync_log_files (
    run_id      uuid        NOT NULL REFERENCES sync_logs (id) ON DELETE CASCADE,
    seq         integer     NOT NULL,
    batch       integer     NOT NULL,
    source_path text        NOT NULL,
    path_digest bytea       GENERATED ALWAYS AS (decode(md5(source_path), 'hex')) STORED,
    remote_key  text        NOT NULL,
    name        text        NOT NULL,
    etag        text,
    size        bigint,
    outcome     text        CHECK (outcome IN ('new', 'updated', 'unchanged', 'ignored', 'failed', 'removed')),
    pending     boolean     NOT NULL DEFAULT false,
    reason      text,
    document_id uuid,
    decided_at  timestamptz,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX sync_log_files_batch_idx ON sync_log_files (run_id, batch, seq);
CREATE INDEX sync_log_files_path_idx ON sync_log_files (run_id, path_digest);
CREATE INDEX sync_log_files_pending_idx ON sync_log_files (run_id) WHERE pending;

-- Which source lists which document, under which address, and the change signal (an opaque
-- token: an S3 ETag is not a content hash) it had when the source last confirmed it. A
-- document is removed by a run only when no source claims it any more (R-SYNC-2).
CREATE TABLE document_claims (
    source_id   uuid        NOT NULL REFERENCES sync_sources (id) ON DELETE CASCADE,
    document_id uuid        NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    source_path text        NOT NULL,
    path_digest bytea       GENERATED ALWAYS AS (decode(md5(source_path), 'hex')) STORED,
    etag        text,
    size        bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, document_id)
);
CREATE INDEX document_claims_document_idx ON document_claims (document_id);
CREATE INDEX document_claims_path_idx ON document_claims (source_id, path_digest);

-- Who created, changed, cloned or deleted a source (R-SYNC-5): the actor, the connector, the
-- collection (and the one it left, when it moved) and the secret's id - never the config.
CREATE TABLE sync_audit (
    id                       bigserial PRIMARY KEY,
    action                   text        NOT NULL,
    source_id                uuid        NOT NULL,
    actor                    text        NOT NULL,
    connector                text        NOT NULL,
    kb_id                    uuid,
    collection_name          text,
    previous_kb_id           uuid,
    previous_collection_name text,
    secret_id                text,
    cloned_from              uuid,
    created_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sync_audit_source_idx ON sync_audit (source_id, id);

-- R-SYNC-3's second lookup: a document by name that no address claims (an upload) in one base.
CREATE INDEX IF NOT EXISTS documents_kb_unaddressed_filename_idx
    ON documents (kb_id, filename) WHERE source_path IS NULL;
-- Its third: by content within a base.
CREATE INDEX IF NOT EXISTS documents_kb_content_hash_idx ON documents (kb_id, content_hash);
