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

from .._validation import MAX_KEY_BYTES, check_key

__all__ = [
    "ROOT_PREFIX",
    "check_address",
    "check_checkpoint",
    "check_names",
    "checkpoint_message_id",
    "digest",
    "index_session_id",
    "namespace_message_id",
    "session_id",
    "split_session_id",
    "thread_prefix",
    "thread_text",
    "thread_words",
    "value_message_id",
]

ROOT_PREFIX = "lg:"
"""Every checkpoint session's id starts with this."""

_MAX_ID_PART = 96  # message ids are capped at 256 characters
_MAX_THREAD_BYTES = MAX_KEY_BYTES - 16  # room for the prefix, its length and a colon


def thread_text(thread_id: object) -> str:
    """A thread id as the saver stores it (LangGraph passes str, int or UUID), refused
    in LangGraph's terms when the store could not hold it (a NUL, a lone surrogate,
    too long) and when it is None: ``str(None)`` would be one thread, ``"None"``,
    shared by every caller that forgot to pass one."""
    if thread_id is None:
        raise ValueError("thread_id is None: pass the thread's id in "
                         "config['configurable']['thread_id']")
    return check_key(str(thread_id), "thread_id", most=_MAX_THREAD_BYTES)


def check_address(thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> None:
    """Refuse, in LangGraph's terms, a config whose ids the store could not hold
    (a NUL, a lone surrogate, too long), before the store names its session id."""
    check_key(checkpoint_ns, "checkpoint_ns", empty=True)
    if checkpoint_id is not None:
        check_key(checkpoint_id, "checkpoint_id")
    size = len(session_id(thread_id, checkpoint_ns).encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"thread_id and checkpoint_ns are too long together: {size:,} bytes "
                         f"of UTF-8 with the saver's prefix, over {MAX_KEY_BYTES:,}")


def check_checkpoint(checkpoint: object) -> None:
    """Refuse, in LangGraph's terms, a ``put`` of something that is not a checkpoint
    (a dict with a str ``id``, a dict ``channel_values`` and a dict
    ``channel_versions``), before anything is read or stored: LangGraph always
    passes one; a caller of ``put`` itself may not."""
    if not isinstance(checkpoint, dict):
        raise TypeError(f"the checkpoint to put must be a dict (a LangGraph Checkpoint), "
                        f"got {type(checkpoint).__name__}")
    for field in ("id", "channel_values", "channel_versions"):
        if field not in checkpoint:
            raise ValueError(f"the checkpoint to put has no {field!r}")
    check_key(checkpoint["id"], "the checkpoint's id")
    for field in ("channel_values", "channel_versions"):
        if not isinstance(checkpoint[field], dict):
            raise TypeError(f"the checkpoint's {field} must be a dict, "
                            f"got {type(checkpoint[field]).__name__}")


def check_names(task_id: str, task_path: str, channels: list[str]) -> None:
    """Refuse a task id, task path or channel name that is not text (put_writes); their
    length is the entry's to bound (they are digested into ids, never keys)."""
    check_key(task_id, "task_id", empty=True, most=None)
    check_key(task_path, "task_path", empty=True, most=None)
    for channel in channels:
        check_key(channel, "channel", empty=True, most=None)


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


def thread_words(thread_id: str, checkpoint_ns: str) -> str:
    """A checkpoint session as users of the checkpointer name it, in errors and reports."""
    return f"thread {thread_id!r} checkpoint_ns {checkpoint_ns!r}"


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
