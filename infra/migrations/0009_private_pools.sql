-- Private pools, version 2 (issue 19, R-ACC-6): one document shared into several users' private
-- pools. It is stored, parsed and embedded once, in its organization's recipients base (a base no
-- one reads as a whole: scope 'recipients'); who reads it is the rows of document_recipients.

-- The scope check named by PostgreSQL for the unnamed CHECK of migration 0001.
ALTER TABLE knowledge_bases DROP CONSTRAINT IF EXISTS knowledge_bases_scope_check;
ALTER TABLE knowledge_bases ADD CONSTRAINT knowledge_bases_scope_check
    CHECK (scope IN ('personal', 'org', 'app', 'recipients'));
ALTER TABLE knowledge_bases ADD CONSTRAINT knowledge_bases_recipients_org_check
    CHECK (scope <> 'recipients' OR org_id IS NOT NULL);
-- One recipients base per organization: two first shares racing insert one row, and the second waits
-- on this index for the first to commit.
CREATE UNIQUE INDEX knowledge_bases_recipients_org_idx ON knowledge_bases (org_id) WHERE scope = 'recipients';

-- Who a shared document is for. A row is a recipient's access; the document (row, chunks, object)
-- goes with its last row. org_id is the sharer's organization: the recipient check also requires
-- the reader's organization to be it, so naming a user of another organization opens nothing.
CREATE TABLE document_recipients (
    document_id uuid        NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    user_id     text        NOT NULL,
    org_id      text        NOT NULL,
    shared_by   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, user_id)
);
-- A recipient's search, listing and cap start from their own rows.
CREATE INDEX document_recipients_user_idx ON document_recipients (user_id, org_id, document_id);
