"""The synchronous store: ``open_store(url)`` and its sessions.

Generated from the async source (:mod:`chatledger._async.store`) into
:mod:`chatledger._sync.store`; this module is its public name.
"""

from __future__ import annotations

from ._sync.store import Session, Store, open_store

__all__ = ["Session", "Store", "open_store"]
