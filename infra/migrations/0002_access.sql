-- Access, version 2: private-pool upload quotas (R-ACC-5) and the indexes the
-- claim (R-VEC-4) and the pool cap read.

-- One row per user whose uploads are counted. Its row lock serialises that user's
-- quota decisions: the check and the recording of an upload happen under it, in
-- the transaction that writes the document row, so twenty concurrent requests
-- can never be accepted past a limit, and a refused or rolled-back upload counts
-- for nothing.
CREATE TABLE upload_quotas (
    user_id     text        PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Accepted private-pool uploads, kept for a day: the sliding windows of the
-- per-minute and per-day limits are counted from these rows.
CREATE TABLE upload_events (
    user_id     text        NOT NULL REFERENCES upload_quotas (user_id) ON DELETE CASCADE,
    accepted_at timestamptz NOT NULL
);
CREATE INDEX upload_events_user_time_idx ON upload_events (user_id, accepted_at);

-- A user's private pool is every personal base they own; the cap counts its documents.
CREATE INDEX knowledge_bases_personal_owner_idx ON knowledge_bases (owner_id) WHERE scope = 'personal';

-- The claim asks whether content no base files sits under a name.
CREATE INDEX documents_unfiled_collection_idx ON documents (collection_name) WHERE kb_id IS NULL;
