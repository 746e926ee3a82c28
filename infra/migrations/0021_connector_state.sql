-- What a connector keeps between runs of a source (R-SYNC-7): a cursor such as a delta link or the
-- commit a git ref last pointed at. A run's list task records the state it would keep on the run
-- (sync_logs.connector_state); `finish` copies it to the source only when the run succeeded with no
-- failed file, so a cursor never advances past a change that was not ingested. Changing what a
-- source reads (its config, base or secret) forgets it. A run whose connector answered "nothing
-- changed since that state" (an unchanged git ref) lists nothing and removes nothing: `unchanged`.
ALTER TABLE sync_sources ADD COLUMN IF NOT EXISTS connector_state jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE sync_logs ADD COLUMN IF NOT EXISTS connector_state jsonb;
ALTER TABLE sync_logs ADD COLUMN IF NOT EXISTS unchanged boolean NOT NULL DEFAULT false;
