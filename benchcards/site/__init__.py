"""The static export: pages, addresses, the incremental writer and the Jinja2 templates."""
