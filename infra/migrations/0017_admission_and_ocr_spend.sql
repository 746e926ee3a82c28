-- Issue 37 items 4 and 7.
-- How many of an archive's members were counted against its owners' upload limits: a direct
-- upload counts them when it is accepted (it reads the archive then), a presigned or synced archive
-- when it is unpacked. The unpack counts only the rest, so a redelivery counts nothing twice.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS members_admitted integer NOT NULL DEFAULT 0;

-- OCR pages recognised per tenant (an organization, or a user outside one) per UTC day, against the
-- operator's OCR_PAGES_PER_TENANT_PER_DAY budget (sluice.admission). Kept a few days, then swept.
CREATE TABLE IF NOT EXISTS ocr_usage (
    tenant text    NOT NULL,
    day    date    NOT NULL,
    pages  integer NOT NULL DEFAULT 0 CHECK (pages >= 0),
    PRIMARY KEY (tenant, day)
);
