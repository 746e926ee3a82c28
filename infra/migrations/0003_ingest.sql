-- Ingestion bookkeeping (issue 5): what an S3 drop was when its row was opened, and
-- what the last failed delivery of a stage said.

-- An inbox object's ETag and S3 sequencer at the event that opened the row: a
-- duplicate or out-of-order ObjectCreated for the same content changes nothing (R-DOC-7, R-UP-3).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_etag text;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_sequencer text;
-- The summary a stage wrote when a delivery failed and went back to its queue; the
-- DLQ handler copies it into error_message when the last delivery fails (R-DOC-4, R-PARSE-5).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS last_failure text;

-- Replacement and drops look rows up by their address inside one base (R-DOC-6).
CREATE INDEX IF NOT EXISTS documents_kb_source_path_idx ON documents (kb_id, source_path);
