"""The asynchronous source of the backend contract and its transactional base;
:mod:`chatledger._backends._sync` is generated from it by ``scripts/unasync.py``."""
