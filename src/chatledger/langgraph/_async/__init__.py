"""The asynchronous checkpoint saver: the source of ``_sync/``."""
