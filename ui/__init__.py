"""Streamlit helpers shared by the pages (the only package that imports Streamlit)."""
