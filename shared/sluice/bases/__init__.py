"""Knowledge bases as a service (R-VEC-4, R-EMB-1, R-SRCH-7): creating, reading and changing them
(``service``), claiming their collection names (``names``), and an organization's recipients base
for shared private documents (``recipients``). Who reaches a base, its grants and key binding stay
in ``sluice.access``."""

from sluice.bases.names import CLAIM_RETRY_AFTER_SECONDS, CLAIM_WAIT_SECONDS, claim_name, derive_collection_name
from sluice.bases.recipients import recipients_base
from sluice.bases.service import (
    CreateKnowledgeBase,
    DefaultEmbedding,
    UpdateKnowledgeBase,
    create_base,
    get_base,
    list_bases,
    list_collections,
    update_base,
)

__all__ = [
    "CLAIM_RETRY_AFTER_SECONDS",
    "CLAIM_WAIT_SECONDS",
    "CreateKnowledgeBase",
    "DefaultEmbedding",
    "UpdateKnowledgeBase",
    "claim_name",
    "create_base",
    "derive_collection_name",
    "get_base",
    "list_bases",
    "list_collections",
    "recipients_base",
    "update_base",
]
