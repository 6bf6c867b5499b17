"""campaign-dash: a live dashboard for GPU inference-server optimization campaigns."""

__version__ = "0.1.0"
