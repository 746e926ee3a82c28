-- Which parser read a document and how many of its pages OCR recognised (R-PARSE-7). Null parser:
-- not parsed yet (or parsed before this column); null ocr_pages: OCR was off for it.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS parser text;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS ocr_pages integer;
