"""Measure a running OpenAI-compatible server (llama-server first): ``python -m live``."""
