"""The write side: validate raw result folders and load them into DuckDB (``python -m ingest``).

Everything that writes lives here: validation (``validate``, ``files``, ``jsonread``),
rows (``rows``), creating the tables of ``schemas.tables`` and the atomic swap (``store``),
loading (``load``), the site build (``build``) and uploads (``upload``). ``benchcards`` only reads.
"""

from ingest.errors import IngestError
from ingest.load import Report, ingest_paths, validate_paths

__all__ = ["IngestError", "Report", "ingest_paths", "validate_paths"]
