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
    """What a message weighs in a batch, about its bytes: its data, its content (text,
    or blocks: a base64 image is text in a block), tool calls and metadata."""
    heavy = len(message.data or b"") + _json_weight(message.content)
    if message.tool_calls:
        heavy += _json_weight(message.tool_calls)
    if message.metadata:
        heavy += _json_weight(message.metadata)
    return heavy


def _json_weight(value: object) -> int:
    """The characters of a JSON value's strings, keys included (8 for anything else):
    no encoding of the value, which a copy would then do again."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + _json_weight(item) for key, item in value.items())
    if isinstance(value, list):
        return sum(_json_weight(item) for item in value)
    return 8


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
