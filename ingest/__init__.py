"""Validate raw result folders and load them into DuckDB (``python -m ingest``)."""

from ingest.load import Report, ingest_paths, validate_paths
from ingest.validate import IngestError

__all__ = ["IngestError", "Report", "ingest_paths", "validate_paths"]
