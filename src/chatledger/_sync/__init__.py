# Generated from src/chatledger/_async/__init__.py by scripts/unasync.py: edit that file, not this one.
"""The synchronous source of the store: :mod:`chatledger._sync` is generated
from these modules by ``scripts/unasync.py``; edit here, never there."""
