# Generated from src/chatledger/_backends/_async/__init__.py by scripts/unasync.py: edit that file, not this one.
"""The synchronous source of the backend contract and its transactional base;
:mod:`chatledger._backends._sync` is generated from it by ``scripts/unasync.py``."""
