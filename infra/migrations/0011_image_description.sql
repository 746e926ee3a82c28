-- Image description (issue 18, R-PARSE-6): how many of a document's images were described and how
-- many were not, and why, for the record a user reads (a failed description never fails the document).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS images_described integer;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS images_undescribed integer;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS image_note text;
