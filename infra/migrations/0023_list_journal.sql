-- A listing that takes more than one step (R-SYNC-6: a crawl of 10,000 pages outlasts any function):
-- each step of a run's list task writes what it did to the run's journal as it goes (one entry per
-- page visited: the page's outcome, the links it queued), and the next step, or a retry of a step
-- killed mid-way, replays it and goes on from there, so no page is fetched twice. The list step that
-- finishes the listing writes the run's file rows and empties the journal.
CREATE TABLE IF NOT EXISTS sync_list_journal (
    run_id uuid   NOT NULL REFERENCES sync_logs (id) ON DELETE CASCADE,
    seq    bigint GENERATED ALWAYS AS IDENTITY,
    entry  jsonb  NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- What a run's connector asked of the remote side: requests made and body bytes received (the web
-- connector's crawl and fetches; NULL where a connector does not count).
ALTER TABLE sync_logs ADD COLUMN IF NOT EXISTS requests_made bigint;
ALTER TABLE sync_logs ADD COLUMN IF NOT EXISTS bytes_downloaded bigint;
