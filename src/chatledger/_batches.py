"""How much one append carries when a copy moves many entries: a bound in bytes.

Redis reads a whole command into memory (its client-query-buffer-limit, 1 GiB
by default, closes the connection above it), and every backend holds a batch in
memory on both sides: a copy that appends entries in pages bounds each page by
the bytes of data it carries, not only by how many entries it holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ._messages import Message

__all__ = ["APPEND_DATA_BYTES", "by_bytes", "weight"]

APPEND_DATA_BYTES = 64 * 1024 * 1024
"""Bytes of data (and text) per append, unless one entry alone has more."""


def weight(message: Message) -> int:
    """The bytes a message weighs in a batch: its data and its text."""
    text = message.content if isinstance(message.content, str) else ""
    return len(message.data or b"") + len(text)


def by_bytes(messages: Sequence[Message], most: int) -> Iterator[list[Message]]:
    """``messages`` in order, in batches of at most ``most`` bytes each (a message
    heavier than that alone is a batch of its own)."""
    batch: list[Message] = []
    held = 0
    for message in messages:
        heavy = weight(message)
        if batch and held + heavy > most:
            yield batch
            batch, held = [], 0
        batch.append(message)
        held += heavy
    if batch:
        yield batch
