-- Old runs' file lists expire (issue 26): the reaper's sweep deletes the sync_log_files rows of a
-- source's runs older than its latest SYNC_RUN_FILES_KEEP_RUNS, and notes when here; the run's row
-- and its totals stay.
ALTER TABLE sync_logs ADD COLUMN IF NOT EXISTS files_expired_at timestamptz;
