# Generated from src/chatledger/_backends/memory/_async/__init__.py by scripts/unasync.py: edit that file, not this one.
"""The synchronous source of the memory:// backend; :mod:`.._sync` is generated
from it by ``scripts/unasync.py``."""
