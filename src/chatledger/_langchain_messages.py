"""LangChain messages to chatledger messages and back, exactly.

It imports ``langchain_core`` (the ``langchain`` extra): the LangChain
integration imports it, and the store only when a LangChain chat model counts
its tokens; it lies below both, so neither reaches up for it.

The ledger's own fields carry what every reader of a session understands:
``role``, ``content``, ``id``, ``name``, ``tool_calls`` and ``tool_call_id``.
Every other field LangChain keeps on a message (``additional_kwargs``,
``response_metadata``, ``usage_metadata``, ``invalid_tool_calls``,
``artifact``, ``status``, a chunk's ``tool_call_chunks``, a custom ``role``,
extra attributes) goes into ``metadata["langchain"]`` under its own name, and
only when it differs from the field's default: a plain message stays plain, and
messages written with chatledger's own API read back as LangChain messages too.
Three entries there are not fields' values but say how to rebuild one:

- ``type``: LangChain's type tag when it is not the role's usual one
  (``AIMessageChunk``, ``chat``, ``function``, ...);
- ``id``: present (None or "") when the LangChain message had no id, so it comes
  back without one although the ledger gave it an id of its own;
- ``artifact_in_data``: true when a tool message's artifact is bytes (a
  screenshot, a PDF), kept as the ledger message's ``data``.

Whatever else cannot come back equal (an artifact that is neither JSON nor
bytes, ...) is refused by the store's validation with ``InvalidMessage``
naming the field, e.g. ``messages[1].metadata.langchain.artifact``.

Any other ledger message that carries ``data`` has no LangChain form:
LangChain messages have no field for bytes, and base64 in a content block or
in ``additional_kwargs`` would come back as text, not as the message that was
stored. Reading one raises CorruptEntryError for its seq, like any entry that
cannot be a LangChain message, rather than dropping the bytes silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from pydantic import ValidationError

from ._errors import CorruptEntryError, InvalidMessage
from ._messages import JSON, Message, Role, ToolCall

__all__ = ["LANGCHAIN_KEY", "from_ledger", "to_ledger"]

LANGCHAIN_KEY = "langchain"
"""The metadata key under which LangChain's other fields are kept."""
_ARTIFACT_IN_DATA = "artifact_in_data"


@dataclass(frozen=True)
class _Kind:
    cls: type[BaseMessage]
    role: Role  # the ledger role, unless the message names its own (ChatMessage)

    @cached_property
    def takes_tool_calls(self) -> bool:
        return "tool_calls" in self.cls.model_fields

    @cached_property
    def takes_tool_call_id(self) -> bool:
        return "tool_call_id" in self.cls.model_fields

    @cached_property
    def defaults(self) -> tuple[tuple[str, bool, Any], ...]:
        """Each field kept in metadata: its name, whether it is required, its default.

        Asked of pydantic once per class, not per message: ``get_default``
        inspects the factory's signature on every call, which cost more than
        the rest of the conversion. The defaults are only compared with, never
        handed out, so one instance of each serves every message.
        """
        return tuple(
            (name, field.is_required(),
             None if field.is_required() else field.get_default(call_default_factory=True))
            for name, field in self.cls.model_fields.items() if name not in _OWN_FIELDS
        )


_KINDS: dict[str, _Kind] = {
    str(kind.cls.model_fields["type"].default): kind
    for kind in (
        _Kind(HumanMessage, "user"),
        _Kind(HumanMessageChunk, "user"),
        _Kind(AIMessage, "assistant"),
        _Kind(AIMessageChunk, "assistant"),
        _Kind(SystemMessage, "system"),
        _Kind(SystemMessageChunk, "system"),
        _Kind(ToolMessage, "tool"),
        _Kind(ToolMessageChunk, "tool"),
        # Legacy function results are matched to their call by name.
        _Kind(FunctionMessage, "tool"),
        _Kind(FunctionMessageChunk, "tool"),
        _Kind(ChatMessage, "user"),
        _Kind(ChatMessageChunk, "user"),
    )
}
_USUAL_TYPE: dict[str, str] = {
    "user": "human", "assistant": "ai", "system": "system", "tool": "tool"
}
# A ChatMessage's custom role is kept as is; the ledger gets the nearest standard one.
_CHAT_ROLES: dict[str, Role] = {
    "user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
    "system": "system",
}
# Fields that travel in the ledger's own fields, never in metadata.
_OWN_FIELDS = frozenset({"content", "id", "name", "type", "tool_calls", "tool_call_id"})


def to_ledger(
    message: BaseMessage, *, ledger_id: str | None = None, path: str = "message"
) -> Message:
    """The chatledger form of ``message``.

    Its own id, when it has one, is the ledger id (so re-adding it stores
    nothing); otherwise ``ledger_id``, or a new one. ``path`` names the message
    in errors.
    """
    kind = _kind_of(message, path)
    role = _CHAT_ROLES.get(message.role, "user") if isinstance(message, ChatMessage) else kind.role
    carried = _carried_fields(message, kind)
    if message.type != _USUAL_TYPE[role]:
        carried["type"] = message.type
    tool_calls = cast("list[ToolCall]", getattr(message, "tool_calls", []))
    if not all(isinstance(call.get("id"), str) for call in tool_calls):
        carried["tool_calls"] = cast("JSON", tool_calls)  # the ledger needs ids there
        tool_calls = []
    if not message.id:
        carried["id"] = message.id
    data = _artifact_bytes(message, carried)
    ledger_id = message.id or ledger_id
    # Without an id of any kind, the ledger's default: a new UUIDv7.
    own_id: dict[str, Any] = {"id": ledger_id} if ledger_id else {}
    return Message(
        role=role,
        content=cast("Any", message.content),
        **own_id,
        name=message.name,
        tool_calls=tool_calls,
        tool_call_id=_tool_call_id(message),
        metadata={LANGCHAIN_KEY: carried} if carried else {},
        data=data,
    )


def _artifact_bytes(message: BaseMessage, carried: dict[str, JSON]) -> bytes | None:
    """A tool message's artifact when it is bytes, taken out of ``carried`` (JSON has no
    bytes) to travel as the ledger message's ``data``; None for any other message."""
    artifact: object = carried.get("artifact")  # typed JSON, but any object until checked
    if not isinstance(message, ToolMessage) or type(artifact) is not bytes:
        return None
    del carried["artifact"]
    carried[_ARTIFACT_IN_DATA] = True
    return artifact


def from_ledger(message: Message, session: str) -> BaseMessage:
    """The LangChain message that ``message`` was made from.

    A message written with chatledger's own API becomes the usual LangChain
    message for its role, with the ledger id as its id. An entry that cannot be
    one (one that carries ``data`` other than a tool message's artifact, too)
    raises CorruptEntryError rather than being skipped.
    """
    carried = message.metadata.get(LANGCHAIN_KEY, {})
    if not isinstance(carried, dict):
        raise _not_langchain(message, session, f"metadata.{LANGCHAIN_KEY} is not an object")
    tag = carried.get("type", _USUAL_TYPE[message.role])
    kind = _KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise _not_langchain(message, session, f"unknown LangChain message type {tag!r}")
    artifact_in_data = carried.get(_ARTIFACT_IN_DATA) is True and issubclass(kind.cls,
                                                                              ToolMessage)
    if (message.data is not None) is not artifact_in_data:
        raise _not_langchain(message, session, (
            f"it carries {len(message.data):,} bytes of data, which LangChain messages "
            "have no field for") if message.data is not None else (
            f"metadata.{LANGCHAIN_KEY}.{_ARTIFACT_IN_DATA} names data it does not carry"))
    values: dict[str, Any] = {"content": message.content, "id": message.id, "name": message.name}
    if kind.takes_tool_calls:
        values["tool_calls"] = message.tool_calls
    if kind.takes_tool_call_id:
        values["tool_call_id"] = message.tool_call_id
    if carried:
        values.update((name, value) for name, value in carried.items()
                      if name not in ("type", _ARTIFACT_IN_DATA))
    if artifact_in_data:
        values["artifact"] = message.data
    try:
        return kind.cls(**values)
    except (ValidationError, TypeError) as exc:
        raise _not_langchain(message, session, str(exc)) from exc


def _kind_of(message: object, path: str) -> _Kind:
    if not isinstance(message, BaseMessage):
        raise InvalidMessage(path, f"expected a LangChain message, got {type(message).__name__}")
    kind = _KINDS.get(message.type)
    # A subclass of its own would come back as the class it mimics: refuse it.
    if kind is None or type(message) is not kind.cls:
        raise InvalidMessage(
            path, f"{type(message).__name__} is not a message type chatledger can store "
            f"exactly (known: {', '.join(kind.cls.__name__ for kind in _KINDS.values())})",
        )
    return kind


def _carried_fields(message: BaseMessage, kind: _Kind) -> dict[str, JSON]:
    """The fields (and extra attributes) kept in metadata: those not at their default."""
    carried: dict[str, JSON] = {}
    for name, required, default in kind.defaults:
        value = getattr(message, name)
        if not required and type(value) is type(default) and value == default:
            continue
        carried[name] = value
    carried.update(message.model_extra or {})
    return carried


def _tool_call_id(message: BaseMessage) -> str | None:
    if isinstance(message, ToolMessage):
        return message.tool_call_id
    if isinstance(message, FunctionMessage):
        return message.name
    return None


def _not_langchain(message: Message, session: str, reason: str) -> CorruptEntryError:
    return CorruptEntryError(
        session, message.seq or 0, f"cannot be read as a LangChain message: {reason}"
    )
