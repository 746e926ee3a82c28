-- What the parse stage says of a document besides its text (R-UP-6, R-PARSE-1): read as another kind
-- than its name says, stopped at a page or cell limit, a page that could not be read. Null: nothing to say.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS parse_notes text[];
