"""benchcards: measure, publish and compare local-LLM inference setups.

The library is plain Python (no Streamlit): import it from the app, the CLIs, the
export or a notebook.
"""

__version__ = "0.3.0"
