-- The reaper (issue 17): a document processing with no progress for longer than any stage could
-- take is re-driven once per attempt (redriven_attempt records which), then failed with a sentence.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS redriven_attempt integer;
-- The sweep reads the oldest processing rows; done and error rows are the bulk of the table.
CREATE INDEX IF NOT EXISTS documents_processing_idle_idx ON documents (updated_at) WHERE status = 'processing';
