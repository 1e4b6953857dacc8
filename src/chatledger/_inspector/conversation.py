"""A conversation as the page shows it: a window of messages, tool calls linked
to their results, metadata and non-text content as folded JSON.

A stored entry of the window that cannot be decoded (bytes that are no entry,
one sealed with a key the keyring lacks) is shown as damaged in its place, with
its seq and why, among the messages that decode: the page is where a user looks
to diagnose such a session. A read decodes its whole window and raises at the
first damaged entry, so a window holding one is read again entry by entry.

Everything here is data for the templates, which escape all of it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import _core
from .._async.store import AsyncStore, read_each
from .._errors import EncryptionKeyError
from .._messages import Message
from .._results import SessionInfo

__all__ = ["Conversation", "DamagedMessage", "MessageView", "anchor", "conversation",
           "linked", "pretty"]


def anchor(kind: str, tool_call_id: str) -> str:
    """An HTML id for a tool call or its result: any id a model invented becomes
    a short token safe in an attribute and a fragment."""
    return f"{kind}-{hashlib.sha256(tool_call_id.encode('utf-8', 'replace')).hexdigest()[:16]}"


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=repr).decode()


@dataclass(frozen=True)
class ToolCallView:
    id: str
    name: str
    args: str
    anchor: str
    result: str | None  # the anchor of its result, when the page shows it


@dataclass(frozen=True)
class MessageView:
    message: Message
    tool_calls: list[ToolCallView] = field(default_factory=list)
    answers: str | None = None  # the anchor of the call this tool result answers
    anchor: str | None = None
    damaged: None = None  # how the template tells it from a DamagedMessage

    @property
    def blocks(self) -> str | None:
        """Non-text content blocks as JSON (the text is shown as text)."""
        content = self.message.content
        if isinstance(content, str):
            return None
        rest = [block for block in content if not isinstance(block, str)
                and block.get("type") != "text"]
        return pretty(rest) if rest else None

    @property
    def metadata(self) -> str | None:
        return pretty(self.message.metadata) if self.message.metadata else None


@dataclass(frozen=True)
class DamagedMessage:
    """A stored entry of the window that cannot be decoded: where it is, and why."""

    seq: int
    damaged: str  # what is wrong with it, in the words of doctor's entries check
    sealed: bool = False  # the keyring lacks its key or the key does not open it

    @property
    def label(self) -> str:
        return "cannot be opened" if self.sealed else "damaged"


@dataclass(frozen=True)
class Conversation:
    id: str
    info: SessionInfo
    messages: list[MessageView | DamagedMessage]
    after: int  # the window holds the messages after this seq
    older: int | None  # ``after`` of the previous window, None at the start
    newer: int | None


async def conversation(store: AsyncStore, session_id: str, info: SessionInfo,
                       after: int | None, limit: int) -> Conversation:
    """The ``limit`` messages after seq ``after`` (default: the newest ``limit``)."""
    floor = info.first_seq - 1
    start = max(floor, info.version - limit) if after is None else max(floor, after)
    entries, version = await read_each(store.session(session_id), after=start, limit=limit)
    views = iter(linked([e for e in entries if isinstance(e, Message)]))
    shown: list[MessageView | DamagedMessage] = [
        next(views) if isinstance(e, Message)
        else DamagedMessage(e.seq, _core.entry_damage(e), isinstance(e, EncryptionKeyError))
        for e in entries]
    older = max(floor, start - limit) if start > floor else None
    newer = start + limit if start + limit < version else None
    return Conversation(session_id, info, shown, start, older, newer)


def linked(messages: list[Message]) -> list[MessageView]:
    """Views of ``messages``, each tool call linked to its result where both are there."""
    results = {m.tool_call_id for m in messages if m.tool_call_id is not None}
    calls = {call["id"] for m in messages for call in m.tool_calls}
    views = []
    for message in messages:
        tool_calls = [ToolCallView(call["id"], call["name"], pretty(call["args"]),
                                   anchor("call", call["id"]),
                                   anchor("result", call["id"]) if call["id"] in results
                                   else None)
                      for call in message.tool_calls]
        answered = message.tool_call_id
        views.append(MessageView(
            message, tool_calls,
            answers=anchor("call", answered) if answered in calls else None,
            anchor=None if answered is None else anchor("result", answered)))
    return views
