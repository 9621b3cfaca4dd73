"""Where figures come from: read-only database connections, typed queries, raw files, paths and locks. Imports
domain."""
