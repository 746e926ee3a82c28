"""Who may reach a knowledge base or a collection (R-ACC-1..3), decided in one place."""

from sluice.access.resolve import (
    ReachableCollection,
    can_read,
    can_write,
    reachable_collections,
    readable_bases,
    resolve_base,
    resolve_collection,
)

__all__ = [
    "ReachableCollection",
    "can_read",
    "can_write",
    "reachable_collections",
    "readable_bases",
    "resolve_base",
    "resolve_collection",
]
