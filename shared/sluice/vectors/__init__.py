"""The pgvector store: runtime tables per collection, name rules, batched writes, search."""
