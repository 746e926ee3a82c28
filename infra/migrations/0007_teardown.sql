-- Teardowns on Step Functions (issue 15, SPEC §11). A row of collection_teardowns is the
-- reservation of a name (R-TD-1) while released_at is NULL, and the receipt of the teardown
-- afterwards: what it was asked to remove, where it got to, why it failed, what it removed.

ALTER TABLE collection_teardowns
    -- running: a workflow is (or should be) working on it; failed: a step failed, the reservation
    -- stays and the hourly sweep starts it again; done: everything went and the name is released.
    ADD COLUMN IF NOT EXISTS state text NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'done', 'failed')),
    -- The step last started (queued, chunks, objects, sources, release, done); with state failed,
    -- failed_step says which one failed.
    ADD COLUMN IF NOT EXISTS step text NOT NULL DEFAULT 'queued',
    ADD COLUMN IF NOT EXISTS failed_step text,
    -- The bases whose rows were deleted, and the default bases cleared (their rows kept), by the request.
    ADD COLUMN IF NOT EXISTS deleted_kb_ids uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN IF NOT EXISTS cleared_kb_ids uuid[] NOT NULL DEFAULT '{}',
    -- Each base as it was (id, name, scope, org_id, owner_id, is_default): the receipt names them,
    -- and who may read the receipt is decided against them once the rows are gone.
    ADD COLUMN IF NOT EXISTS bases jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- The sync sources of the deleted bases when the request ran (issue 14's sync_sources).
    ADD COLUMN IF NOT EXISTS sync_source_ids uuid[] NOT NULL DEFAULT '{}',
    -- What was removed, counted as it goes: the rows in the request, the rest by the steps.
    ADD COLUMN IF NOT EXISTS documents_removed integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS chunks_removed bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS objects_removed bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS bytes_removed bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS sync_sources_removed integer NOT NULL DEFAULT 0,
    -- Another tenant's rows left under a dropped table describe chunks that are gone: marked error.
    ADD COLUMN IF NOT EXISTS unfiled_documents_failed integer NOT NULL DEFAULT 0,
    -- Set by the chunk step: whether the table was dropped (NULL until the step has run).
    ADD COLUMN IF NOT EXISTS table_dropped boolean,
    -- What the release step found left (all zeros, or it does not release).
    ADD COLUMN IF NOT EXISTS left_over jsonb,
    -- requested, started, failed, restarted, done: the receipt's own account, newest last.
    ADD COLUMN IF NOT EXISTS history jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN IF NOT EXISTS execution_arn text,
    -- Moves with every step and batch: the sweep restarts a reservation with no progress for an hour.
    ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN IF NOT EXISTS finished_at timestamptz,
    ADD COLUMN IF NOT EXISTS released_at timestamptz;

-- Claims and uploads ask whether a name is reserved; the sweep asks which reservations stalled.
CREATE INDEX IF NOT EXISTS collection_teardowns_reserved_idx
    ON collection_teardowns (collection_name) WHERE released_at IS NULL;
CREATE INDEX IF NOT EXISTS collection_teardowns_stalled_idx
    ON collection_teardowns (updated_at) WHERE released_at IS NULL;

-- The document rows a teardown deleted in its request, kept until the workflow has removed their
-- stored objects (and, when the table stays, their chunks). One row per document.
CREATE TABLE teardown_documents (
    teardown_id        uuid    NOT NULL REFERENCES collection_teardowns (id) ON DELETE CASCADE,
    document_id        uuid    NOT NULL,
    kb_id              uuid,
    vector_document_id uuid,
    storage_path       text,
    source             text,
    stage              text,
    attempt            integer NOT NULL,
    PRIMARY KEY (teardown_id, document_id)
);
