"""Entries larger than one message may hold: split into parts within their batch.

A store refuses a message over its ``max_message_bytes`` (1 MiB by default),
and a backend has a ceiling of its own (a DynamoDB item holds 400 KB). A
checkpoint's value has neither limit: a 20 MB document in a graph's state is
stored as parts, and so is a LedgerStore item's. ``split`` cuts each
too-large entry's data into parts, puts every part of the batch first and the
entries after, in their order, so the seq arithmetic of a put (its values just
before its checkpoint) is unchanged; each entry names its parts as ``parts:
[back, count]`` (they are the ``count`` messages from ``back`` seqs before
it). The batch is one append, so the parts and their entry are stored together
or not at all.

``join`` restores whole entries from a window of messages, and says how far
back to read when an entry's parts lie before the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import orjson

from .._messages import JSON, Message

__all__ = ["BadParts", "join", "split"]

PART = "Part"
_SLACK = 512  # what a stored message adds around its metadata: role, id, time, keys


class BadParts(ValueError):
    """An entry's ``parts`` is malformed; ``seq`` is that entry's (a window's first
    seq would name another entry as the damaged one)."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(reason)
        self.seq = seq


def split(messages: Sequence[Message], max_bytes: int) -> list[Message]:
    """The batch ``messages`` with every entry that would exceed ``max_bytes`` in parts."""
    parts: list[Message] = []
    heads: list[tuple[Message, int, int]] = []  # (entry, its first part's index, count)
    for message in messages:
        room = max_bytes - _overhead(message)
        data = message.data
        if data is None or len(data) <= room:
            heads.append((message, 0, 0))
            continue
        if room < 1024:
            raise ValueError(f"max_message_bytes={max_bytes:,} leaves no room for the data of "
                             f"{message.content!r}: raise it")
        chunks = [data[i:i + room] for i in range(0, len(data), room)]
        first = len(parts)
        parts += [_part(message, n, chunk) for n, chunk in enumerate(chunks[:-1])]
        heads.append((replace(message, data=chunks[-1]), first, len(chunks) - 1))
    batch = list(parts)
    for head, first, count in heads:
        back = len(batch) - first
        batch.append(replace(head, metadata={**head.metadata, "parts": [back, count]})
                     if count else head)
    return batch


def join(messages: Sequence[Message], since: int = 0) -> tuple[list[Message], int | None]:
    """The entries of a window of messages (oldest first) from seq ``since`` on, each
    with all its data.

    Parts are left out. Returns also the lowest seq of parts the window lacks
    (None: it lacks none); the entries that lack them are left out too. Messages
    before ``since`` are read for their parts only: an entry there, whose own
    parts may lie further back, is not wanted (a read that went back for the
    parts of the entries from ``since`` on). A malformed ``parts`` raises
    BadParts (a ValueError).
    """
    found = {m.seq: m for m in messages if m.metadata.get("kind") == PART}
    whole: list[Message] = []
    lacking: int | None = None
    for message in messages:
        if (message.seq or 0) < since:
            continue
        spec = _spec(message)
        if spec is None:
            if message.metadata.get("kind") != PART:
                whole.append(message)
            continue
        first = (message.seq or 0) - spec[0]
        chunks = [found.get(first + n) for n in range(spec[1])]
        if any(chunk is None for chunk in chunks):
            lacking = first if lacking is None else min(lacking, first)
            continue
        data = b"".join(chunk.data or b"" for chunk in chunks if chunk is not None)
        whole.append(replace(message, data=data + (message.data or b"")))
    return whole, lacking


def _spec(message: Message) -> tuple[int, int] | None:
    """``(back, count)`` of an entry stored in parts; None for any other message."""
    spec = message.metadata.get("parts")
    if spec is None:
        return None
    match spec:
        case [int(back), int(count)] if 0 < count <= back:
            return back, count
    raise BadParts(message.seq or 0, f"an entry's parts are {spec!r}")


def _part(entry: Message, number: int, chunk: bytes) -> Message:
    return Message(role="system", content=f"part {number + 1} of {entry.content}",
                   id=f"{entry.id}/{number}",
                   metadata={**_tags(entry), "kind": PART},
                   data=chunk)


def _tags(entry: Message) -> dict[str, JSON]:
    """What a part keeps of its entry's metadata: a checkpoint's ``langgraph`` tag
    (a LedgerStore item's entry has none)."""
    return {"langgraph": entry.metadata["langgraph"]} if "langgraph" in entry.metadata else {}


def _overhead(message: Message) -> int:
    text = message.content if isinstance(message.content, str) else ""
    return (len(orjson.dumps(message.metadata)) + len(text.encode("utf-8", "surrogatepass"))
            + len(message.id) + _SLACK)
