-- A stage's progress in its own fields (issue 11): `stage` stays a word a client can switch
-- on ("embedding"), and the steps of a long stage are counted beside it.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS progress_done integer;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS progress_total integer;
