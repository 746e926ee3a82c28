-- R-SRCH-9 (issue 37): BM25's statistics per base, not per collection table. A collection table holds
-- the chunks of every base that names the collection (bases of different owners and tenants, and an
-- organization's shared pool), so statistics kept per table let one base's content move another's
-- scores: a pool member read the chunks-per-lexeme count of any word through her own probe's score,
-- and a flood of chunks into one base sank another user's identifier. A search now sums the rows of
-- the bases it reaches (sluice.vectors.fulltext.scope_statistics); a shared pool's reader, who reaches
-- documents rather than a base, is counted from those documents as the search runs.
--
-- Same two tables as migration 0014, keyed by (table, base). A chunk filed under no base (kb_id NULL:
-- no search reaches it) is counted under the nil uuid. Kept exact by the same statement triggers, in
-- the writing transaction; the tables are rebuilt from the collection tables below.
DROP TABLE IF EXISTS collection_lexemes;
DROP TABLE IF EXISTS collection_text_stats;

CREATE TABLE collection_text_stats (
    relid   oid    NOT NULL,
    kb_id   uuid   NOT NULL,
    chunks  bigint NOT NULL,
    lexemes bigint NOT NULL,
    PRIMARY KEY (relid, kb_id)
);

CREATE TABLE collection_lexemes (
    relid  oid    NOT NULL,
    kb_id  uuid   NOT NULL,
    lexeme text   NOT NULL,
    chunks bigint NOT NULL,
    PRIMARY KEY (relid, kb_id, lexeme)
);

-- `changed` is the statement's inserted (sign 1) or deleted (-1) rows. Every writer locks its bases'
-- rows in base order before any lexeme row, and the lexeme rows in (base, lexeme) order, so two
-- concurrent writers of one base queue on its row and writers of different bases of one collection
-- no longer wait for each other (no deadlock either way). A base or a lexeme no chunk holds any
-- more is removed.
CREATE OR REPLACE FUNCTION sluice_text_stats_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sign int := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    nil uuid := '00000000-0000-0000-0000-000000000000';
    gone_bases uuid[];
    gone_kbs uuid[];
    gone_lexemes text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM changed) THEN
        RETURN NULL;
    END IF;
    WITH up AS (
        INSERT INTO collection_text_stats AS s (relid, kb_id, chunks, lexemes)
        SELECT TG_RELID, coalesce(kb_id, nil), sign * count(*), sign * coalesce(sum(length(content_tsv)), 0)
          FROM changed
         GROUP BY 2
         ORDER BY 2
        ON CONFLICT (relid, kb_id) DO UPDATE
            SET chunks = s.chunks + excluded.chunks, lexemes = s.lexemes + excluded.lexemes
        RETURNING s.kb_id, s.chunks
    )
    SELECT array_agg(kb_id) FILTER (WHERE chunks <= 0) INTO gone_bases FROM up;
    WITH up AS (
        INSERT INTO collection_lexemes AS l (relid, kb_id, lexeme, chunks)
        SELECT TG_RELID, coalesce(changed.kb_id, nil), u.lexeme, sign * count(*)
          FROM changed, unnest(tsvector_to_array(changed.content_tsv)) AS u(lexeme)
         GROUP BY 2, 3
         ORDER BY 2, 3
        ON CONFLICT (relid, kb_id, lexeme) DO UPDATE SET chunks = l.chunks + excluded.chunks
        RETURNING l.kb_id, l.lexeme, l.chunks
    )
    SELECT array_agg(kb_id) FILTER (WHERE chunks <= 0), array_agg(lexeme) FILTER (WHERE chunks <= 0)
      INTO gone_kbs, gone_lexemes FROM up;
    IF gone_lexemes IS NOT NULL THEN
        DELETE FROM collection_lexemes l
         USING unnest(gone_kbs, gone_lexemes) AS g(kb_id, lexeme)
         WHERE l.relid = TG_RELID AND l.kb_id = g.kb_id AND l.lexeme = g.lexeme;
    END IF;
    IF gone_bases IS NOT NULL THEN
        DELETE FROM collection_text_stats WHERE relid = TG_RELID AND kb_id = ANY(gone_bases);
    END IF;
    RETURN NULL;
END
$$;

-- Attach the triggers to a collection table and count what it already holds, per base: called by
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
    EXECUTE format('INSERT INTO collection_text_stats (relid, kb_id, chunks, lexemes) '
                   'SELECT %s, coalesce(kb_id, %L::uuid), count(*), coalesce(sum(length(content_tsv)), 0) '
                   'FROM %s GROUP BY 2', rel::oid, '00000000-0000-0000-0000-000000000000', rel);
    EXECUTE format('INSERT INTO collection_lexemes (relid, kb_id, lexeme, chunks) '
                   'SELECT %s, coalesce(t.kb_id, %L::uuid), u.lexeme, count(*) '
                   'FROM %s t, unnest(tsvector_to_array(t.content_tsv)) AS u(lexeme) GROUP BY 2, 3',
                   rel::oid, '00000000-0000-0000-0000-000000000000', rel);
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
