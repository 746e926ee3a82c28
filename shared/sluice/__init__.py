"""Sluice: serverless document ingestion and retrieval for RAG."""

__version__ = "0.1.0"
