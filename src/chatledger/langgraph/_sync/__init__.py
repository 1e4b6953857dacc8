# Generated from src/chatledger/langgraph/_async/__init__.py by scripts/unasync.py: edit that file, not this one.
"""The synchronous checkpoint saver: the source of ``_sync/``."""
