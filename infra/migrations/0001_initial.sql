-- Sluice schema, version 1: knowledge bases, their grants, tracked documents and
-- teardown reservations. Runtime vector tables (rag_<collection>) are created by
-- the vector store on first write and are not this directory's business (R-OPS-3).

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE knowledge_bases (
    id                  uuid PRIMARY KEY,
    name                text        NOT NULL,
    collection_name     text        NOT NULL,
    scope               text        NOT NULL CHECK (scope IN ('personal', 'org', 'app')),
    owner_id            text,
    org_id              text,
    is_default          boolean     NOT NULL DEFAULT false,
    description         text        NOT NULL DEFAULT '',
    embedding_provider  text        NOT NULL,
    embedding_model     text        NOT NULL,
    embedding_dim       integer     NOT NULL CHECK (embedding_dim > 0),
    embedding_base_url  text,
    embedding_secret_id text,
    ingestion_config    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_by          text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (scope <> 'personal' OR owner_id IS NOT NULL),
    CHECK (scope <> 'org' OR org_id IS NOT NULL)
);
-- collection_name is indexed, not unique: two bases may share one vector table.
CREATE INDEX knowledge_bases_collection_idx ON knowledge_bases (collection_name);
CREATE INDEX knowledge_bases_org_idx ON knowledge_bases (org_id);
CREATE INDEX knowledge_bases_owner_idx ON knowledge_bases (owner_id);

CREATE TABLE knowledge_base_grants (
    kb_id       uuid        NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    user_id     text        NOT NULL,
    permission  text        NOT NULL CHECK (permission IN ('view', 'edit')),
    granted_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kb_id, user_id)
);

CREATE TABLE documents (
    id                  uuid PRIMARY KEY,
    kb_id               uuid        REFERENCES knowledge_bases (id) ON DELETE SET NULL,
    org_id              text,
    collection_name     text        NOT NULL,
    filename            text        NOT NULL,
    filesize            bigint,
    filetype            text,
    status              text        NOT NULL DEFAULT 'processing'
                                    CHECK (status IN ('processing', 'done', 'error')),
    stage               text        NOT NULL DEFAULT 'queued',
    error_message       text,
    vector_document_id  uuid,
    chunk_count         integer     NOT NULL DEFAULT 0,
    storage_path        text,
    source              text        NOT NULL DEFAULT 'upload',
    source_path         text,
    content_hash        text,
    organizational_unit text,
    document_type       text,
    document_date       date,
    uploaded_by         text,
    -- Every (re)run of the pipeline gets a new attempt; stage messages carry it,
    -- so a late or duplicate delivery for an older attempt changes nothing (R-DOC-7).
    attempt             integer     NOT NULL DEFAULT 1,
    ingestion_override  jsonb,
    replaces_document_id uuid,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    completed_at        timestamptz
);
CREATE INDEX documents_kb_idx ON documents (kb_id, created_at DESC);
CREATE INDEX documents_collection_status_idx ON documents (collection_name, status);
CREATE INDEX documents_storage_path_idx ON documents (storage_path);
CREATE INDEX documents_source_path_idx ON documents (source_path);
CREATE INDEX documents_content_hash_idx ON documents (content_hash);

-- A name whose table is still being dropped is not free (R-TD-1, R-VEC-4).
CREATE TABLE collection_teardowns (
    id              uuid PRIMARY KEY,
    collection_name text        NOT NULL,
    kb_id           uuid,
    drop_table      boolean     NOT NULL,
    requested_by    text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text
);
CREATE INDEX collection_teardowns_name_idx ON collection_teardowns (collection_name);
