"""The HTTP API for applications (``/v1`` on ``herald run``'s HTTP port)."""
