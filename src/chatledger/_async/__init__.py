"""The asynchronous source of the store: :mod:`chatledger._sync` is generated
from these modules by ``scripts/unasync.py``; edit here, never there."""
