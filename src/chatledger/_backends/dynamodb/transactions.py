"""What one DynamoDB transaction holds, and batches cut to fit; no I/O.

A transaction takes 100 items and 4 MB, an item 400 KB. A batch over either
takes the large path (a lease, several transactions, one commit), and an entry
over :data:`INLINE` bytes is stored in parts.
"""

from __future__ import annotations

from typing import Any

from ..contract import Batch

__all__ = ["INLINE", "TX_BYTES", "TX_ITEMS", "Group", "chunks", "large", "pieces",
           "whole_groups"]

INLINE = 350_000  # bytes of an entry kept in its own item; the rest goes to parts
TX_ITEMS = 100
TX_BYTES = 3_500_000  # under the 4 MB of a transaction, with room for keys and names
_ITEM_OVERHEAD = 300  # bytes of keys and attribute names an item adds, generously

Group = tuple[list[dict[str, Any]], Any]
"""Operations that go in one transaction together, and what the caller keeps with them."""


def pieces(blob: bytes) -> list[bytes]:
    """An entry's bytes as its item's and its parts' (one piece at least)."""
    return [blob[i:i + INLINE] for i in range(0, len(blob), INLINE)] or [b""]


def large(batch: Batch) -> bool:
    """Whether the batch needs more than one transaction, or parts."""
    size = sum(len(blob) + 2 * len(i.encode("utf-8", "surrogatepass")) + 2 * _ITEM_OVERHEAD
               for i, blob in zip(batch.ids, batch.blobs, strict=True))
    # the meta item, an entry and an id item per message, a new session's index item
    return (2 * len(batch.ids) + 2 > TX_ITEMS or size > TX_BYTES
            or any(len(blob) > INLINE for blob in batch.blobs))


def _item_bytes(op: dict[str, Any]) -> int:
    body = next(iter(op.values()))
    values = [*body.get("Item", {}).values(), *body.get("ExpressionAttributeValues", {}).values()]
    return _ITEM_OVERHEAD + sum(len(v.get("B", b"")) for v in values)


def whole_groups(groups: list[Group]) -> list[list[Group]]:
    """Transactions of at most 100 operations and about 3.5 MB, a group never split."""
    cut: list[list[Group]] = [[]]
    count = size = 0
    for group in groups:
        cost = sum(_item_bytes(op) for op in group[0])
        if cut[-1] and (count + len(group[0]) > TX_ITEMS or size + cost > TX_BYTES):
            cut.append([])
            count = size = 0
        cut[-1].append(group)
        count += len(group[0])
        size += cost
    return [chunk for chunk in cut if chunk]


def chunks(ops: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Transactions of at most 99 operations (room for a fence) and about 3.5 MB."""
    cut: list[list[dict[str, Any]]] = [[]]
    size = 0
    for op in ops:
        cost = _item_bytes(op)
        if len(cut[-1]) >= TX_ITEMS - 1 or size + cost > TX_BYTES:
            cut.append([])
            size = 0
        cut[-1].append(op)
        size += cost
    return [chunk for chunk in cut if chunk]
