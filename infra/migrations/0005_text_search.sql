-- R-SRCH-7 (issue 13): a knowledge base's text search language, fixed when its collection's table
-- is created (the table's generated tsvector column and every query use it). Bases sharing a
-- collection share it. Tables created before this migration use 'simple', as every base did.
ALTER TABLE knowledge_bases ADD COLUMN IF NOT EXISTS text_search_language text NOT NULL DEFAULT 'simple';
