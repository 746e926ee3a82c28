"""Which rows of a collection table a search may read (R-SRCH-2, R-SRCH-3, R-ACC-6, R-SRCH-9): the
caller's resolved bases and their tenants, a shared pool's documents shared with the caller, then the
request's filters, as one WHERE clause both sides of the pool share; and what the lexical statistics
of that scope count."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from psycopg import sql

from sluice.vectors.fulltext import Documents


@dataclass(frozen=True)
class BaseScope:
    """One knowledge base the caller reaches, as resolved: its id and its tenant.

    ``recipient``: the caller reaches only the documents of this base shared with
    that user in its tenant (a recipients base, R-ACC-6), checked in the same WHERE.
    """

    kb_id: uuid.UUID
    org_id: str | None
    recipient: str | None = None


@dataclass(frozen=True)
class ChunkFilter:
    """R-SRCH-2: OR within a dimension, AND across; ``None`` means not filtered.

    A chunk with no value for a filtered dimension never matches (NULL fails
    ``= ANY`` and every comparison), so a filter never widens the scope.
    """

    sources: tuple[str, ...] | None = None
    document_types: tuple[str, ...] | None = None
    organizational_units: tuple[str, ...] | None = None
    date_from: date | None = None
    date_to: date | None = None
    document_ids: tuple[uuid.UUID, ...] | None = None

    def describe(self) -> dict[str, Any]:
        """The filter as logged: which dimensions and how many values, no values themselves."""
        out: dict[str, Any] = {}
        for name in ("sources", "document_types", "organizational_units", "document_ids"):
            values = getattr(self, name)
            if values is not None:
                out[name] = len(values)
        if self.date_from:
            out["date_from"] = self.date_from.isoformat()
        if self.date_to:
            out["date_to"] = self.date_to.isoformat()
        return out


NO_FILTER = ChunkFilter()


def scope_clause(scope: Sequence[BaseScope], flt: ChunkFilter = NO_FILTER) -> tuple[sql.Composable, dict[str, Any]]:
    """The rows a caller may see and asked for: a resolved base, its tenant, then R-SRCH-2.

    The base alone decides; the tenant is checked beside it so that a chunk
    stamped with another tenant is never read even under a base id it names.
    A base with no tenant (app scope, or a personal base outside any
    organization) matches chunks with no tenant stamped, never "any tenant".
    """
    tenants = sorted({b.org_id for b in scope if b.org_id is not None})
    allow_untenanted = any(b.org_id is None for b in scope)
    whole = sorted({b.kb_id for b in scope if b.recipient is None})
    shared = [b for b in scope if b.recipient is not None]
    params: dict[str, Any] = {"scope_kb_ids": whole}
    bases: list[sql.Composable] = [sql.SQL("kb_id = ANY(%(scope_kb_ids)s)")]
    for i, b in enumerate(shared):
        # R-ACC-6: a recipients base reaches only the documents shared with the caller in its tenant.
        # A semi-join on the recipients table in the WHERE both sides of the pool share, so it holds
        # before either top-k is taken (R-SRCH-3).
        bases.append(sql.SQL(
            "(kb_id = %({k})s AND org_id = %({o})s AND document_id IN ("
            "SELECT r.document_id FROM document_recipients r WHERE r.user_id = %({u})s AND r.org_id = %({o})s))"
        ).format(k=sql.SQL(f"scope_shared_kb_{i}"), o=sql.SQL(f"scope_shared_org_{i}"),
                 u=sql.SQL(f"scope_shared_user_{i}")))
        params[f"scope_shared_kb_{i}"] = b.kb_id
        params[f"scope_shared_org_{i}"] = b.org_id
        params[f"scope_shared_user_{i}"] = b.recipient
    parts: list[sql.Composable] = [
        bases[0] if len(bases) == 1 else sql.SQL("(") + sql.SQL(" OR ").join(bases) + sql.SQL(")")]
    tenant_checks: list[sql.Composable] = []
    if tenants:
        tenant_checks.append(sql.SQL("org_id = ANY(%(scope_tenants)s)"))
        params["scope_tenants"] = tenants
    if allow_untenanted:
        tenant_checks.append(sql.SQL("org_id IS NULL"))
    parts.append(sql.SQL("(") + sql.SQL(" OR ").join(tenant_checks) + sql.SQL(")"))
    for column, values, key in (
        ("source", flt.sources, "f_sources"),
        ("document_type", flt.document_types, "f_document_types"),
        ("organizational_unit", flt.organizational_units, "f_units"),
        ("document_id", flt.document_ids, "f_document_ids"),
    ):
        if values is not None:
            parts.append(sql.SQL("{c} = ANY(%({k})s)").format(c=sql.Identifier(column), k=sql.SQL(key)))
            params[key] = list(values)
    if flt.date_from is not None:
        parts.append(sql.SQL("document_date >= %(f_date_from)s"))
        params["f_date_from"] = flt.date_from
    if flt.date_to is not None:
        parts.append(sql.SQL("document_date <= %(f_date_to)s"))
        params["f_date_to"] = flt.date_to
    return sql.SQL(" AND ").join(parts), params


def statistics_scope(scope: Sequence[BaseScope]) -> tuple[list[uuid.UUID], Documents | None]:
    """What the lexical statistics of ``scope`` count (R-SRCH-9): the bases reached whole, and the WHERE
    of the documents a shared pool's reader reaches in the others (None: no such base)."""
    whole = sorted({b.kb_id for b in scope if b.recipient is None})
    shared = [b for b in scope if b.recipient is not None and b.kb_id not in whole]
    return whole, (scope_clause(shared) if shared else None)
