"""The ingestion pipeline: accepting uploads, and the parse → chunk → embed stages."""
