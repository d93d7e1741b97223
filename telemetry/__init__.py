"""What the app reports about itself: the Prometheus metrics (``metrics.py``)."""
