"""The lease a large append holds on its session's meta item while it writes; no I/O.

A batch one transaction cannot hold takes a lease (``lease``, ``lease_until``
:data:`LEASE_SECONDS` ahead, in real time: it bounds a real writer), writes its
items in transactions fenced by the lease, then commits with one conditional
write of the meta item that drops it. The lease's token is made from the batch,
so a retry of the same batch recognises its own lease and resumes.
"""

from __future__ import annotations

import hashlib

from ..contract import Batch
from .layout import Meta

__all__ = ["LEASE_SECONDS", "fresh_token", "token"]

LEASE_SECONDS = 30.0


def fresh_token(batch: Batch, version: int, ledger: str) -> str:
    """The lease of this batch at this version: a retry of it recognises its own lease."""
    digest = hashlib.sha256(f"{ledger}/{version}".encode())
    for message_id in batch.ids:
        digest.update(message_id.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()[:24]


def token(batch: Batch, meta: Meta | None) -> str:
    """The lease ``batch`` would hold on ``meta``'s version ("" without a meta item)."""
    if meta is None:
        return ""
    return fresh_token(batch, meta.info.version, meta.info.ledger)
