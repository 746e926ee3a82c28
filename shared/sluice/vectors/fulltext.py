"""The full-text side of search (R-SRCH-1 revised, R-SRCH-7): a collection's text search language,
the query a search text becomes in it, and how that query ranks a chunk.

A collection's language is the configuration its table's generated ``content_tsv`` column was
created with; the catalog is the one truth, read back from the column's expression, so a table
created before languages existed (``simple``) is searched as it was built.

The query is the OR of the search text's lexemes in that language: any one shared lexeme makes a
chunk a candidate, and the rank favours chunks sharing more of them. A lexeme that most chunks
hold says nothing about which to prefer and would make the text side rank most of the table, so a
lexeme the collection's statistics (``pg_stats.most_common_elems``, kept by ANALYZE) find in more
than ``COMMON_LEXEME_SHARE`` of its chunks, or in more than ``COMMON_LEXEME_ROWS`` of them, is left
out; a text made only of such lexemes, of stop words or of symbols has no text side, and the search
is the vector side alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from psycopg import sql

from sluice.db.connection import Connection
from sluice.errors import ValidationError
from sluice.vectors.names import table_name

DEFAULT_LANGUAGE = "simple"
# How a configuration may be named here: a bare identifier (it is written into the table's DDL).
_LANGUAGE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# The generated column's expression as the catalog prints it: to_tsvector('english'::regconfig, content)
_COLUMN_CONFIG = re.compile(r"to_tsvector\('([a-z_][a-z0-9_]*)'::regconfig")
# SciFact, union pool of 100 a side, english, first 10 after the gate (bench/retrieval_quality.py,
# 2026-12-01): nDCG@10 0.6898 leaving out lexemes in over 1% of chunks, 0.7097 over 5%, 0.7098 over
# 20%, 0.7133 keeping every lexeme. 5% costs 0.004 against keeping all and bounds the text side's
# work: no lexeme of the query makes it rank more than 5% of a collection.
COMMON_LEXEME_SHARE = 0.05
# 5% of a large collection is still many rows to rank: bench/search_latency.py at 1,000,000 chunks
# (2026-12-01) measured the union's p95 at +156 ms unfiltered and +220 ms at 50% over the vector side
# alone, with lexemes in up to 50,000 rows kept. So no lexeme may make the text side rank more than
# 5,000 rows (5% of 100,000): nothing changes up to 100,000 chunks (SciFact's 5,183 included), and a
# larger collection's text side costs what a 100,000-chunk one's does (the text side alone at 1M:
# p95 333-409 ms before, 26 ms with the cut). What it leaves out there is a word in over 5,000
# chunks, which the vector side's meaning covers better than a rank over it.
COMMON_LEXEME_ROWS = 5_000


def text_search_languages(conn: Connection) -> list[str]:
    """The text search configurations this server offers (``GET /rag/text-search-languages``)."""
    rows = conn.execute(
        "SELECT cfgname::text AS name FROM pg_ts_config WHERE pg_ts_config_is_visible(oid) ORDER BY 1").fetchall()
    return [r["name"] for r in rows]


def check_language(conn: Connection, language: str, field: str = "text_search_language") -> str:
    """``language`` if the server has such a configuration, else a refusal naming the field."""
    offered = text_search_languages(conn)
    if not _LANGUAGE_NAME.fullmatch(language) or language not in offered:
        raise ValidationError("Unknown text search language", fields={
            field: f"Choose one of the server's text search configurations: {', '.join(offered)}."})
    return language


def tsvector_column(language: str) -> sql.Composed:
    """The generated column a collection's table is created with, in ``language``."""
    if not _LANGUAGE_NAME.fullmatch(language):
        raise ValueError(f"not a text search configuration name: {language!r}")
    return sql.SQL("content_tsv tsvector GENERATED ALWAYS AS (to_tsvector({cfg}::regconfig, content)) STORED").format(
        cfg=sql.Literal(language))


def language_of_expression(expression: str | None) -> str:
    """The configuration named by a ``content_tsv`` expression as the catalog prints it."""
    found = _COLUMN_CONFIG.search(expression or "")
    return found.group(1) if found else DEFAULT_LANGUAGE


def table_language(conn: Connection, collection: str) -> str | None:
    """The language of the collection's table, or None when it has no table yet."""
    row = conn.execute(
        """SELECT to_regclass(%(t)s) IS NOT NULL AS present,
                  (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
                     JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                    WHERE d.adrelid = to_regclass(%(t)s) AND a.attname = 'content_tsv') AS expression""",
        {"t": table_name(collection)},
    ).fetchone()
    if row is None or not row["present"]:
        return None
    return language_of_expression(row["expression"])


@dataclass(frozen=True)
class TextRank:
    """How the text side ranks a chunk: Postgres' ``ts_rank`` or ``ts_rank_cd`` (cover density),
    with a normalization bit mask (0 none, 1 divide by 1 + log(length), 2 by length, ...)."""

    function: Literal["ts_rank", "ts_rank_cd"] = "ts_rank"
    normalization: int = 0

    def expression(self, column: sql.Composable, query: sql.Composable) -> sql.Composed:
        return sql.SQL("{f}({c}, {q}, {n})").format(f=sql.Identifier(self.function), c=column, q=query,
                                                    n=sql.Literal(int(self.normalization)))


# Measured inside the union pool on SciFact (bench/retrieval_quality.py, 2026-12-01; english, 100 a
# side, first 10 after the gate), nDCG@10: ts_rank 0.7097 without length normalisation, 0.6674 / 0.6449
# / 0.7091 with normalisation 1 / 2 / 32 (bench/text_term.py: 8 0.6450, 16 0.6692); ts_rank_cd 0.5116 /
# 0.5669 / 0.6565 / 0.5474 (cover density rewards query words near each other, which an OR of a
# claim's words rarely are). The normalised ranks only overtake this one when the text term weighs
# five to twelve times what R-SRCH-1 gives it (bench/text_term.py).
TEXT_RANK = TextRank("ts_rank", 0)


@dataclass(frozen=True)
class TextQuery:
    """What the text side searches for: ``tsquery`` (None: nothing worth searching) and why."""

    tsquery: str | None
    lexemes: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # too common in this collection to tell chunks apart


NO_TEXT = TextQuery(None)


def text_query(conn: Connection, collection: str, language: str, text: str,
               common_share: float | None = None) -> TextQuery:
    """The OR of ``text``'s lexemes in ``language``, less those in over ``common_share`` (by default
    ``COMMON_LEXEME_SHARE``) of the chunks or in over ``COMMON_LEXEME_ROWS`` of them."""
    common_share = COMMON_LEXEME_SHARE if common_share is None else common_share
    if not text.strip():
        return NO_TEXT
    row = conn.execute(
        """SELECT tsvector_to_array(to_tsvector(%(cfg)s::regconfig, %(text)s)) AS lexemes,
                  s.most_common_elems::text::text[] AS common, s.most_common_elem_freqs AS shares,
                  (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%(t)s)) AS chunks
             FROM (SELECT 1) AS one
             LEFT JOIN pg_stats s ON s.schemaname = ANY(current_schemas(false)) AND s.tablename = %(t)s
                                 AND s.attname = 'content_tsv'""",
        {"cfg": language, "text": text, "t": table_name(collection)},
    ).fetchone()
    if row is None or not row["lexemes"]:
        return NO_TEXT
    # most_common_elem_freqs ends with three summary numbers past one share per element; zip drops them.
    share = dict(zip(row["common"] or [], row["shares"] or [], strict=False))
    lexemes = tuple(row["lexemes"])
    chunks = float(row["chunks"] or 0)  # ANALYZE's estimate; -1 or 0 before the first one
    if chunks > 0:
        common_share = min(common_share, COMMON_LEXEME_ROWS / chunks)
    kept = tuple(lx for lx in lexemes if share.get(lx, 0.0) <= common_share)
    dropped = tuple(lx for lx in lexemes if lx not in kept)
    if not kept:
        return TextQuery(None, lexemes, dropped)
    return TextQuery(" | ".join(_quoted(lx) for lx in kept), lexemes, dropped)


def _quoted(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand: taken as it is, never parsed as an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
