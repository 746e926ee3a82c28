"""The lexical side of search (R-SRCH-1 revised 2026-12-02, R-SRCH-7): a collection's text search
language, the query a search text becomes in it, and BM25 over it, in plain SQL.

A collection's language is the configuration its table's generated ``content_tsv`` column was
created with; the catalog is the one truth, read back from the column's expression, so a table
created before languages existed (``simple``) is searched as it was built.

The query is the OR of the search text's lexemes in that language: any one shared lexeme makes a
chunk a candidate (found through the GIN index). Each candidate is scored by BM25 (k1 1.2, b 0.75):

    sum over the query's lexemes  idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))
    idf = ln(1 + (N - n + 0.5) / (n + 0.5))

``N`` the chunks of the caller's scope, ``n`` those holding the lexeme, ``tf`` the lexeme's occurrences
in the chunk, ``len`` the chunk's lexeme count (``length(content_tsv)``: distinct lexemes, which
Postgres keeps in the tsvector's header) and ``avg_len`` the scope's average of it. The IDF is
Robertson-Sparck Jones' with Lucene's ``1 +`` inside the logarithm, so a lexeme in every chunk
weighs a little, never less than nothing. ``tf`` is ``ts_rank_cd`` with every weight 1 and a
one-lexeme query, which is exactly the count of the lexeme's positions (at most 255, Postgres' own
cap).

The statistics are the caller's scope's (R-SRCH-9, ``scope_statistics``), never the table's: a
collection table holds the chunks of every base naming the collection, of other owners and tenants,
and of a shared pool's documents shared with others, and statistics of content the caller cannot
read would let a score tell of it (how many chunks hold a word) and let another base's writer move
it. Per base, the collection table's triggers keep ``N``, the lengths' sum and each lexeme's ``n``
exact in the writing transaction (migrations 0014, 0022), and a search sums its bases' rows; a
shared pool's reader is counted from the documents shared with them as the search runs.

A lexeme in more than ``COMMON_LEXEME_ROWS`` chunks of the scope is left out of the scoring (not of the strong
match): it bounds how many rows one query lexeme makes the lexical side score in a large
collection. A text made only of such lexemes, of stop words or of symbols has no lexical side, and
the search is the vector side alone.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from sluice.db.connection import Connection
from sluice.errors import ValidationError
from sluice.vectors.names import table_name

DEFAULT_LANGUAGE = "simple"
# How a configuration may be named here: a bare identifier (it is written into the table's DDL).
_LANGUAGE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# The generated column's expression as the catalog prints it: to_tsvector('english'::regconfig, content)
_COLUMN_CONFIG = re.compile(r"to_tsvector\('([a-z_][a-z0-9_]*)'::regconfig")
K1 = 1.2
B = 0.75
# bench/search_latency.py at 1,000,000 chunks (2026-12-01, ts_rank) measured the union's p95 at
# +156 ms unfiltered and +220 ms at 50% over the vector side alone with lexemes in up to 50,000 rows
# kept, and the text side alone at p95 333-409 ms against 26 ms with this cut. Nothing changes up
# to 100,000 chunks unless one lexeme is in over 5% of them; what it leaves out is a word in over
# 5,000 chunks, whose IDF is small there anyway. Re-measured with BM25 in bench/README.md.
COMMON_LEXEME_ROWS = 5_000
# R-SRCH-10: a query lexeme holding a digit (an order number, an error code, a part number, a year) that
# this few chunks of the scope hold is an identifier the user typed to find exactly those chunks: the
# record, a reply quoting it, its attachment. In more, it names a kind of thing (a year, a product
# line), and the cosine keeps its say (sluice.search.ranking).
RARE_IDENTIFIER_CHUNKS = 10
# R-SRCH-8: the lexical side scores at most this many of a query's lexemes, the rarest (fewest chunks):
# each scored lexeme is one BM25 term evaluated on every row matching any of them, so a pasted page of
# 1,200 distinct words made one search hold the database for seconds (8.5 s on 2,000 chunks). The
# longest SciFact claim has 28 distinct words and the lay questions fewer, so neither corpus's nDCG can
# move; the common words a long text adds weigh least anyway.
MAX_QUERY_LEXEMES = 32
_DIGIT = re.compile(r"[0-9]")


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



# --- the statistics and the query ---------------------------------------------------------------


# A WHERE clause over a collection table and its parameters (sluice.vectors.scope.scope_clause).
Documents = tuple[sql.Composable, dict[str, Any]]


@dataclass(frozen=True)
class TextStatistics:
    """What BM25 reads of a collection: its chunks, their average lexeme count, and for each lexeme
    asked about the chunks holding it (a lexeme no chunk holds is absent)."""

    chunks: int
    avg_len: float
    holding: dict[str, int]


def idf(chunks: int, holding: int) -> float:
    """Robertson-Sparck Jones' IDF, ``1 +`` inside the logarithm (Lucene's): positive for every lexeme."""
    return math.log(1.0 + (chunks - holding + 0.5) / (holding + 0.5))


@dataclass(frozen=True)
class TextQuery:
    """What the lexical side searches for and scores with.

    ``lexemes``: every lexeme of the text in the collection's language (stop words are not lexemes);
    ``weights``: the lexemes scored, each with its IDF; ``dropped``: held by more than
    ``COMMON_LEXEME_ROWS`` chunks, or past the ``MAX_QUERY_LEXEMES`` rarest, so not scored;
    ``avg_len``: the scope's average chunk length.
    """

    lexemes: tuple[str, ...] = ()
    weights: tuple[tuple[str, float], ...] = ()
    avg_len: float = 1.0
    dropped: tuple[str, ...] = ()
    # Lexemes with a digit held by at most RARE_IDENTIFIER_CHUNKS chunks (R-SRCH-10).
    rare_identifiers: tuple[str, ...] = ()

    @property
    def bound(self) -> float:
        """The most BM25 any chunk can score for this query (each term's saturation tends to ``k1 + 1``
        times its IDF): the query's own scale, which no other chunk of the pool moves
        (sluice.search.ranking). A chunk of average length holding each lexeme once scores 1 / (k1 + 1)
        of it."""
        return (K1 + 1) * sum(w for _, w in self.weights)

    @property
    def tsquery(self) -> str | None:
        """The OR of the lexemes scored: what finds the candidates (None: no lexical side)."""
        return " | ".join(quoted(lx) for lx, _ in self.weights) if self.weights else None

    @property
    def every_lexeme(self) -> str | None:
        """The AND of every lexeme of the text: what a strong lexical match holds (R-SRCH-1)."""
        return " & ".join(quoted(lx) for lx in self.lexemes) if self.lexemes else None

    def score(self, column: sql.Composable) -> sql.Composable:
        """The BM25 of the chunk whose tsvector is ``column``: one term per lexeme scored."""
        if not self.weights:
            return sql.SQL("0.0::float8")
        # k1 * (1 - b + b * len / avg_len), once per term: the tsvector's length is read from its header.
        norm = sql.SQL("({k1} * (1 - {b} + {b} * length({c}) / {avg}))").format(
            k1=sql.Literal(K1), b=sql.Literal(B), c=column, avg=sql.Literal(float(self.avg_len)))
        terms = []
        for lexeme, weight in self.weights:
            # ts_rank_cd with every weight 1 and one lexeme: the lexeme's occurrences in the chunk.
            tf = sql.SQL("ts_rank_cd('{{1,1,1,1}}'::float4[], {c}, {q}::tsquery)::float8").format(
                c=column, q=sql.Literal(quoted(lexeme)))
            terms.append(sql.SQL("{w} * {tf} * {k1p} / ({tf} + {norm})").format(
                w=sql.Literal(float(weight)), tf=tf, k1p=sql.Literal(K1 + 1), norm=norm))
        return sql.SQL("(") + sql.SQL(" + ").join(terms) + sql.SQL(")")


NO_TEXT = TextQuery()


def scope_statistics(conn: Connection, table: str, lexemes: Sequence[str], kb_ids: Sequence[uuid.UUID],
                     documents: Documents | None = None) -> TextStatistics:
    """The statistics of the caller's scope in the collection table ``table`` (a name), for ``lexemes``
    (R-SRCH-9): the sum of the rows the triggers keep for each base of ``kb_ids``, which the caller
    reaches whole, and, for ``documents`` (a WHERE over the table and its parameters: the documents
    of a shared pool shared with the caller), a count of those rows as the query runs. Nothing
    outside the scope is read, so no order or score depends on content the caller cannot open.

    The documents' count reads each of their chunks' lexemes: a shared pool's reader reaches at most
    ``PRIVATE_DOC_CAP`` documents (R-ACC-5), and bench/search_latency.py measures the cost.
    """
    chunks, total, holding = 0, 0, {}
    if kb_ids:
        # One index probe per base and lexeme (the primary key), whatever the table holds.
        row = conn.execute(
            """SELECT coalesce(sum(s.chunks), 0) AS chunks, coalesce(sum(s.lexemes), 0) AS lexemes,
                      (SELECT coalesce(json_object_agg(h.lexeme, h.chunks), '{}'::json)
                         FROM (SELECT l.lexeme, sum(l.chunks) AS chunks
                                 FROM unnest(%(kbs)s::uuid[]) AS k(kb_id)
                                CROSS JOIN unnest(%(lx)s::text[]) AS x(lexeme)
                                 JOIN collection_lexemes l
                                   ON l.relid = to_regclass(%(t)s) AND l.kb_id = k.kb_id AND l.lexeme = x.lexeme
                                GROUP BY l.lexeme) AS h) AS holding
                 FROM collection_text_stats s WHERE s.relid = to_regclass(%(t)s) AND s.kb_id = ANY(%(kbs)s)""",
            {"t": table, "kbs": list(kb_ids), "lx": list(lexemes)},
        ).fetchone()
        if row is not None:
            chunks, total = int(row["chunks"]), int(row["lexemes"])
            holding = {k: int(v) for k, v in (row["holding"] or {}).items()}
    if documents is not None:
        where, params = documents
        t = sql.Identifier(table)
        head = conn.execute(
            sql.SQL("SELECT count(*) AS chunks, coalesce(sum(length(content_tsv)), 0) AS lexemes FROM {t} WHERE ")
            .format(t=t) + where, params).fetchone()
        if head is not None and int(head["chunks"]) > 0:
            chunks, total = chunks + int(head["chunks"]), total + int(head["lexemes"])
            # Every lexeme of the scope's chunks, kept when the query has it (a hashed semi-join).
            counted = conn.execute(
                sql.SQL("SELECT u.lexeme, count(*) AS chunks FROM (SELECT content_tsv FROM {t} WHERE ").format(t=t)
                + where + sql.SQL(") AS c, unnest(tsvector_to_array(c.content_tsv)) AS u(lexeme) "
                                  "WHERE u.lexeme IN (SELECT unnest(%(stats_lexemes)s::text[])) GROUP BY u.lexeme"),
                {**params, "stats_lexemes": list(lexemes)}).fetchall()
            for r in counted:
                holding[r["lexeme"]] = holding.get(r["lexeme"], 0) + int(r["chunks"])
    return TextStatistics(chunks, (total / chunks) if chunks > 0 else 1.0, holding)


def query_lexemes(conn: Connection, language: str, text: str) -> tuple[str, ...]:
    """The distinct lexemes of ``text`` in ``language``, in the tsvector's order."""
    if not text.strip():
        return ()
    row = conn.execute("SELECT tsvector_to_array(to_tsvector(%s::regconfig, %s)) AS lexemes",
                       (language, text)).fetchone()
    return tuple(row["lexemes"] or ()) if row is not None else ()


def weigh(lexemes: Sequence[str], stats: TextStatistics | None, common_rows: int | None = None) -> TextQuery:
    """The query of ``lexemes`` against ``stats``: each lexeme some chunk holds, with its IDF, less those
    in over ``common_rows`` (by default ``COMMON_LEXEME_ROWS``) chunks."""
    if not lexemes or stats is None or stats.chunks <= 0:
        return TextQuery(tuple(lexemes))
    limit = COMMON_LEXEME_ROWS if common_rows is None else common_rows
    held = [(lx, stats.holding[lx]) for lx in lexemes if stats.holding.get(lx, 0) > 0]
    # the rarest MAX_QUERY_LEXEMES of those under the common-lexeme cut, in the query's own order
    scored = {lx for lx, _ in sorted((h for h in held if h[1] <= limit), key=lambda h: (h[1], h[0]))
              [:MAX_QUERY_LEXEMES]}
    weights = tuple((lx, idf(stats.chunks, n)) for lx, n in held if lx in scored)
    dropped = tuple(lx for lx, n in held if lx not in scored)
    rare = tuple(lx for lx, n in held if n <= RARE_IDENTIFIER_CHUNKS and _DIGIT.search(lx))
    return TextQuery(tuple(lexemes), weights, stats.avg_len, dropped, rare)


def text_query(conn: Connection, collection: str, language: str, text: str, kb_ids: Sequence[uuid.UUID],
               documents: Documents | None = None, common_rows: int | None = None) -> TextQuery:
    """The lexical query of ``text`` against the statistics of the caller's scope (``scope_statistics``)."""
    lexemes = query_lexemes(conn, language, text)
    if not lexemes:
        return NO_TEXT
    return weigh(lexemes, scope_statistics(conn, table_name(collection), lexemes, kb_ids, documents), common_rows)


def quoted(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand: taken as it is, never parsed as an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
