"""Where a thread's checkpoints live in the store, and the ids of what is stored.

One ledger session per (thread, checkpoint namespace) holds that namespace's
chain of checkpoints, the channel values they changed and the writes of their
tasks, in the order they were stored. Everything of one namespace is in one
session, so every write is one atomic append on one key set (one hash slot on
Redis Cluster), and ``expect_version`` on that session is what turns a second
writer into ``ConflictError``.

Session ids start with the thread's own prefix, ``lg:<length>:<thread>:``: the
length makes it unambiguous (thread ``t1`` is no prefix of thread ``t10``). The
thread's index (its namespaces, and when they were last kept alive together) is
the session ``lg:<length>:<thread>``, the prefix without its colon; as no other
thread's id starts with it, ``purge(prefix=<index id>)`` removes exactly one
thread: its index and every namespace.

Message ids derive from what LangGraph passes (checkpoint id, task id, the
writes themselves), so a retried ``put`` or ``put_writes`` is stored once.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "ROOT_PREFIX",
    "checkpoint_message_id",
    "digest",
    "index_session_id",
    "namespace_message_id",
    "session_id",
    "split_session_id",
    "thread_prefix",
    "value_message_id",
]

ROOT_PREFIX = "lg:"
"""Every checkpoint session's id starts with this."""

_MAX_ID_PART = 96  # message ids are capped at 256 characters


def thread_prefix(thread_id: str) -> str:
    """The prefix of every session of ``thread_id``, and of no other thread's."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"thread_id must be a non-empty str, got {thread_id!r}")
    return f"{ROOT_PREFIX}{len(thread_id)}:{thread_id}:"


def index_session_id(thread_id: str) -> str:
    """The thread's index session; also the prefix of all of the thread's sessions."""
    return thread_prefix(thread_id)[:-1]


def session_id(thread_id: str, checkpoint_ns: str) -> str:
    """The session holding namespace ``checkpoint_ns`` of ``thread_id``."""
    return thread_prefix(thread_id) + checkpoint_ns


def split_session_id(session: str) -> tuple[str, str] | None:
    """``(thread_id, checkpoint_ns)`` of a checkpoint session, None for any other id."""
    if not session.startswith(ROOT_PREFIX):
        return None
    length, sep, rest = session[len(ROOT_PREFIX):].partition(":")
    if not sep or not length.isdigit() or len(rest) <= int(length):
        return None
    thread_id, ns = rest[: int(length)], rest[int(length):]
    return (thread_id, ns[1:]) if ns.startswith(":") else None


def digest(*parts: str | bytes) -> str:
    """A short stable digest of ``parts``: ids that depend on content."""
    joined: list[bytes] = []
    for part in parts:  # hashed in one update: the same digest as one per part, cheaper
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        joined += (len(data).to_bytes(8, "big"), data)
    return hashlib.sha256(b"".join(joined)).hexdigest()[:32]


def _part(text: str) -> str:
    return text if len(text) <= _MAX_ID_PART else "#" + digest(text)


def checkpoint_message_id(checkpoint_id: str, prefix: str = "") -> str:
    return f"{prefix}c/{_part(checkpoint_id)}"


def value_message_id(checkpoint_id: str, index: int, prefix: str = "") -> str:
    return f"{prefix}v/{_part(checkpoint_id)}/{index}"


def writes_message_id(checkpoint_id: str, content: str, prefix: str = "") -> str:
    return f"{prefix}w/{_part(checkpoint_id)}/{content}"


def namespace_message_id(checkpoint_ns: str) -> str:
    return f"n/{_part(checkpoint_ns)}"
