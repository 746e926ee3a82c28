-- Chat files, conversations, messages and conversation attachments (issue 16: SPEC §12, R-ACC-4,
-- R-PARSE-4). Everything here belongs to one user: every read names user_id, and another user's
-- row is answered exactly like an absent one.

-- A file uploaded in a chat (R-CHAT-1; seed 000 "ChatFile model"). A presigned upload's row exists
-- before its bytes do (status 'pending'); the arrival is checked, parsed and stored, then 'ready'.
CREATE TABLE chat_files (
    id             uuid PRIMARY KEY,
    user_id        text        NOT NULL,
    filename       text        NOT NULL,
    mime_type      text,
    size           bigint,
    file_type      text,
    storage_path   text        NOT NULL,
    -- The extracted text as a plain object, written the first time an agent with a workspace asks
    -- for it (reference mode), so the same file is written once.
    text_storage_path text,
    status         text        NOT NULL DEFAULT 'ready' CHECK (status IN ('pending', 'ready', 'failed')),
    error_message  text,
    preview        text,
    parsed_content text,
    -- Where each page of a PDF lies in parsed_content ([[number, start, end], ...]): excerpts name their page.
    parsed_pages   jsonb,
    -- Why no text could be read (a scanned PDF, a damaged file); preview and text are then null.
    parse_error    text,
    message_id     uuid,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_files_user_idx ON chat_files (user_id, created_at DESC);
-- The reaper settles presigned uploads that never arrived (sluice.chat.recovery).
CREATE INDEX chat_files_pending_idx ON chat_files (created_at) WHERE status = 'pending';
CREATE INDEX chat_files_message_idx ON chat_files (message_id) WHERE message_id IS NOT NULL;

CREATE TABLE conversations (
    id          uuid PRIMARY KEY,
    user_id     text        NOT NULL,
    title       text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_user_idx ON conversations (user_id, created_at DESC);

CREATE TABLE chat_messages (
    id               uuid PRIMARY KEY,
    conversation_id  uuid        NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id          text        NOT NULL,
    text             text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_messages_conversation_idx ON chat_messages (conversation_id, created_at);

ALTER TABLE chat_files ADD CONSTRAINT chat_files_message_fk
    FOREIGN KEY (message_id) REFERENCES chat_messages (id) ON DELETE SET NULL;

-- A file attached to a conversation, graded by its extracted tokens (R-CHAT-2). A file is attached
-- to at most one conversation: removing the attachment deletes the file (R-CHAT-4).
CREATE TABLE chat_attachments (
    id               uuid PRIMARY KEY,
    conversation_id  uuid        NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    file_id          uuid        NOT NULL UNIQUE REFERENCES chat_files (id) ON DELETE CASCADE,
    user_id          text        NOT NULL,
    -- Every (re)start of the work gets a new attempt; a job message for an older one changes nothing.
    attempt          integer     NOT NULL DEFAULT 1,
    status           text        NOT NULL DEFAULT 'reading'
                     CHECK (status IN ('reading', 'indexing', 'summarizing', 'indexed', 'full_text', 'failed')),
    -- small (full text kept), medium or large (chunks, embeddings and an overview); null until graded
    tier             text        CHECK (tier IN ('small', 'medium', 'large')),
    tokens           integer,
    -- The steps of the current status (embedding batches, then model calls), in fields of their own.
    progress_done    integer,
    progress_total   integer,
    chunk_count      integer     NOT NULL DEFAULT 0,
    overview         text,
    overview_kind    text        CHECK (overview_kind IN ('model', 'extractive')),
    overview_note    text,
    -- The summaries written so far while summarizing, so a continuation or a redelivery resumes;
    -- cleared once the overview is written.
    partial_summaries jsonb      NOT NULL DEFAULT '[]'::jsonb,
    error_message    text,
    -- What the last failed delivery met; the dead-letter handler makes it the error.
    last_failure     text,
    -- The attempt the reaper resumed once (sluice.chat.recovery): idle again after that, it fails.
    redriven_attempt integer,
    registered_document_id uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_attachments_conversation_idx ON chat_attachments (conversation_id, created_at);
-- The local runtime fails what a restart interrupted (sluice.chat.attachments.fail_interrupted), and
-- the reaper finds work that stalled (sluice.chat.recovery).
CREATE INDEX chat_attachments_working_idx ON chat_attachments (status)
    WHERE status IN ('reading', 'indexing', 'summarizing');

-- The chunks of indexed attachments: a table of its own, not a rag_<collection> table, so no
-- collection listing, claim or /rag/search can name it, and a chunk cannot outlive its attachment
-- (the foreign key). The vectors are the bundled model's (all-MiniLM-L6-v2, 384 dimensions).
-- A search is scoped to at most a handful of attachments of one conversation, scored exactly
-- (sluice.vectors.attachments), so there is no HNSW index to keep.
CREATE TABLE chat_attachment_chunks (
    id               bigserial PRIMARY KEY,
    attachment_id    uuid        NOT NULL REFERENCES chat_attachments (id) ON DELETE CASCADE,
    conversation_id  uuid        NOT NULL,
    chunk_index      integer     NOT NULL,
    content          text        NOT NULL,
    embedding        vector(384) NOT NULL,
    page_start       integer,
    page_end         integer,
    content_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
    UNIQUE (attachment_id, chunk_index)
);
CREATE INDEX chat_attachment_chunks_conversation_idx ON chat_attachment_chunks (conversation_id);
