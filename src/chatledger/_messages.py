"""The message model and the helpers that build messages.

A :class:`Message` is plain data with no LangChain dependency; the adapters
convert. Messages read back from a store carry ``seq``, their position in the
session's ledger; ``seq`` does not take part in equality, so a message read
back compares equal to the one that was appended.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal, TypedDict, Union

from ._ids import new_id

__all__ = [
    "JSON",
    "ROLES",
    "Content",
    "ContentBlock",
    "Message",
    "Role",
    "ToolCall",
    "assistant",
    "system",
    "tool",
    "user",
]

# Unions of strings cannot use "|" at run time, so these aliases keep Union.
JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]  # noqa: UP007
Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})
ContentBlock = Union[str, dict[str, JSON]]  # noqa: UP007 -- runtime alias on 3.10
Content = Union[str, list[ContentBlock]]  # noqa: UP007


class ToolCall(TypedDict):
    """A tool call requested by an assistant; extra JSON keys are kept as-is."""

    id: str
    name: str
    args: dict[str, JSON]


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Message:
    """One message of a conversation.

    ``id`` makes appends idempotent: appending a message whose id is already in
    the session stores nothing. Leave it to the default (a UUIDv7) unless you
    have a stable id of your own, e.g. from an upstream request.

    ``data``: opaque bytes carried beside the message (a file, a serialized
    object), stored as they are, never as base64 or inside JSON; None when the
    message carries none (``b""`` is data too, of length 0). It counts towards
    the store's ``max_message_bytes`` and takes part in equality. Keyword-only.
    """

    role: Role
    content: Content
    id: str = field(default_factory=new_id)
    name: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    metadata: dict[str, JSON] = field(default_factory=dict)
    created_at: datetime = field(default_factory=_now)
    # Keyword-only, so that every positional call written before it still works.
    data: bytes | None = field(default=None, kw_only=True)
    seq: int | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        # The generated repr would print every byte of ``data``: megabytes in a log line.
        shown = (f"{f.name}={_shown(getattr(self, f.name))}" for f in fields(self))
        return f"{type(self).__name__}({', '.join(shown)})"

    @property
    def text(self) -> str:
        """The text of the content: itself, or the text blocks joined."""
        if isinstance(self.content, str):
            return self.content
        return "".join(_block_text(block) for block in self.content)


def _shown(value: object) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{memoryview(value).nbytes:,} bytes>"
    return repr(value)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, str):
        return block
    text = block.get("text")
    return text if block.get("type") == "text" and isinstance(text, str) else ""


def user(content: Content, **fields: Any) -> Message:
    """A message from the person talking to the agent."""
    return Message(role="user", content=content, **fields)


def assistant(
    content: Content = "", *, tool_calls: list[ToolCall] | None = None, **fields: Any
) -> Message:
    """A message from the agent, possibly asking for tool calls."""
    return Message(role="assistant", content=content, tool_calls=list(tool_calls or []), **fields)


def system(content: Content, **fields: Any) -> Message:
    """An instruction to the agent."""
    return Message(role="system", content=content, **fields)


def tool(content: Content, *, tool_call_id: str, **fields: Any) -> Message:
    """The result of the tool call ``tool_call_id``."""
    return Message(role="tool", content=content, tool_call_id=tool_call_id, **fields)
