"""Ledger ids for LangChain messages that have none of their own.

Idempotency rests on ids: appending a batch whose ids are stored stores nothing.
A LangChain message's own id is its ledger id. One without an id gets a random
one, unless something stable identifies it:

- in a batch where other messages have ids (a user turn without an id beside
  the model's reply with one), it is identified by those ids, its place and its
  content, so retrying the same batch stores it once, while a different message
  next to the same ids is a different id and the store refuses the mix loudly;
- in a RedisChatMessageHistory list being migrated, by its key, its exact
  stored text and which copy of that text it is, so a second migration finds it.

A batch where no message has an id has nothing stable to derive from: two
identical turns must stay two messages, so its messages get random ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import orjson
from langchain_core.messages import BaseMessage

from .._messages import Message

__all__ = ["with_batch_ids", "migrated_id"]


def with_batch_ids(originals: Sequence[BaseMessage], ledger: list[Message]) -> list[Message]:
    """``ledger`` (converted from ``originals``) with derived ids where they had none."""
    anchors = [message.id for message in originals if message.id]
    if not anchors:
        return ledger
    return [
        converted if original.id else _anchored(converted, anchors, index)
        for index, (original, converted) in enumerate(zip(originals, ledger, strict=True))
    ]


def migrated_id(key: bytes, entry: bytes, copy: int) -> str:
    """The ledger id of the ``copy``-th identical ``entry`` of the list at ``key``."""
    digest = hashlib.sha256()
    for part in (key, entry, str(copy).encode()):
        digest.update(len(part).to_bytes(8, "big") + part)
    return "lcm-" + digest.hexdigest()[:40]


def _anchored(message: Message, anchors: Sequence[str], index: int) -> Message:
    try:
        fingerprint = orjson.dumps(
            [anchors, index, message.role, message.content, message.name, message.tool_calls,
             message.tool_call_id, message.metadata],
            option=orjson.OPT_SORT_KEYS,
        )
    except orjson.JSONEncodeError:
        # Not storable anyway: keep the random id and let validation name the field.
        return message
    return replace(message, id="lcb-" + hashlib.sha256(fingerprint).hexdigest()[:40])
