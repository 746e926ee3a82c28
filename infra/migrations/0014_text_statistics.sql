-- BM25 (R-SRCH-1, revised 2026-12-02, issue 27): the statistics a collection's lexical side scores
-- with, kept exact by the collection table's own triggers, in the transaction that writes or deletes
-- its chunks (the COPY of an embed, a replacement's delete, a retirement, a document delete, a
-- teardown's batches). Keyed by the table's oid: a table dropped and created again starts afresh.
--
-- collection_text_stats: chunks in the table and the sum of their lengths (lexemes per chunk,
-- length(content_tsv)), the average a chunk's length is weighed against.
-- collection_lexemes: per lexeme, the number of chunks holding it (its document frequency).
CREATE TABLE IF NOT EXISTS collection_text_stats (
    relid   oid    PRIMARY KEY,
    chunks  bigint NOT NULL,
    lexemes bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS collection_lexemes (
    relid  oid    NOT NULL,
    lexeme text   NOT NULL,
    chunks bigint NOT NULL,
    PRIMARY KEY (relid, lexeme)
);

-- One function for both triggers: `changed` is the statement's inserted (sign 1) or deleted (-1)
-- rows. The collection's row is updated first: every writer of a collection takes that row lock
-- before any lexeme row, so two concurrent embeds of one collection queue on it instead of
-- locking lexemes in opposite orders (no deadlock), and the lexeme rows are then written in
-- lexeme order. A lexeme no chunk holds any more is removed.
CREATE OR REPLACE FUNCTION sluice_text_stats_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sign int := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    gone text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM changed) THEN
        RETURN NULL;
    END IF;
    INSERT INTO collection_text_stats AS s (relid, chunks, lexemes)
    SELECT TG_RELID, sign * count(*), sign * coalesce(sum(length(content_tsv)), 0) FROM changed
    ON CONFLICT (relid) DO UPDATE SET chunks = s.chunks + excluded.chunks, lexemes = s.lexemes + excluded.lexemes;
    WITH up AS (
        INSERT INTO collection_lexemes AS l (relid, lexeme, chunks)
        SELECT TG_RELID, u.lexeme, sign * count(*)
          FROM changed, unnest(tsvector_to_array(changed.content_tsv)) AS u(lexeme)
         GROUP BY u.lexeme
         ORDER BY u.lexeme
        ON CONFLICT (relid, lexeme) DO UPDATE SET chunks = l.chunks + excluded.chunks
        RETURNING l.lexeme, l.chunks
    )
    SELECT array_agg(lexeme) FILTER (WHERE chunks <= 0) INTO gone FROM up;
    IF gone IS NOT NULL THEN
        DELETE FROM collection_lexemes WHERE relid = TG_RELID AND lexeme = ANY(gone);
    END IF;
    RETURN NULL;
END
$$;

-- Attach the triggers to a collection table and count what it already holds: called by
-- sluice.vectors.store.ensure_table for a new table and below for the tables that exist.
CREATE OR REPLACE FUNCTION sluice_text_stats_attach(rel regclass) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS text_stats_insert ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS text_stats_delete ON %s', rel);
    -- Taken before counting: a concurrent writer waits for the count, then adds to it.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    DELETE FROM collection_text_stats WHERE relid = rel;
    DELETE FROM collection_lexemes WHERE relid = rel;
    EXECUTE format('CREATE TRIGGER text_stats_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                   'FOR EACH STATEMENT EXECUTE FUNCTION sluice_text_stats_change()', rel);
    EXECUTE format('CREATE TRIGGER text_stats_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS changed '
                   'FOR EACH STATEMENT EXECUTE FUNCTION sluice_text_stats_change()', rel);
    EXECUTE format('INSERT INTO collection_text_stats (relid, chunks, lexemes) '
                   'SELECT %s, count(*), coalesce(sum(length(content_tsv)), 0) FROM %s', rel::oid, rel);
    EXECUTE format('INSERT INTO collection_lexemes (relid, lexeme, chunks) '
                   'SELECT %s, u.lexeme, count(*) FROM %s t, unnest(tsvector_to_array(t.content_tsv)) AS u(lexeme) '
                   'GROUP BY u.lexeme', rel::oid, rel);
END
$$;

-- The collection tables that exist: rag_<name> with a content_tsv column, in this schema.
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN
        SELECT c.oid::regclass FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'content_tsv' AND NOT a.attisdropped
         WHERE c.relkind = 'r' AND n.nspname = current_schema() AND starts_with(c.relname, 'rag_')
    LOOP
        PERFORM sluice_text_stats_attach(t);
    END LOOP;
END
$$;
