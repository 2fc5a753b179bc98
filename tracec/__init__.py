"""tracec: the TRACE method as a tool — capability specs compiled into Gymnasium environments."""

__version__ = "0.1.0"
