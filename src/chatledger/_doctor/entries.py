"""Doctor's check that stored entries decode: a sample of every kind of session.

A read decodes every entry of its window, so one damaged entry (bytes that are
not an entry, a record missing a field) makes every read that reaches it raise
``CorruptEntryError``. This check reads the newest :data:`ENTRIES` entries of
up to :data:`SESSIONS` sessions of each kind of the namespace: conversations
(plain sessions) and the LangGraph checkpointer's threads (``lg:...``), whose
entries are then also decoded as checkpoint ledger entries when LangGraph is
installed. LedgerStore items are the ``store items`` check's (``items.py``).
Nothing is written (with ``touch_on_read=True``, each read slides its session's
expiry, as any read does).

Without a keyring, sealed entries cannot be opened here: such sessions are
counted, not judged (``plaintext`` and reads with the keyring judge them).

Cost: a listing of the namespace's sessions and one read per session sampled.
"""

from __future__ import annotations

from collections.abc import Callable

from .._checks import Check
from .._errors import CorruptEntryError, EncryptionKeyError
from .._messages import Message
from .._sync.store import Store

__all__ = ["ENTRIES", "SESSIONS", "sampled_entries"]

SESSIONS = 1000
"""Sessions read per kind, the first listed."""

ENTRIES = 16
"""The newest entries read of each session sampled."""

_CHECKPOINTS = "lg:"  # chatledger.langgraph._layout.ROOT_PREFIX, importable only with LangGraph
_ITEMS = "lgs/"  # the store items check's (items.py)

Decoder = Callable[[str, list[Message]], None]


def sampled_entries(store: Store) -> Check | None:
    """Whether the newest entries of the sampled sessions decode; None for an empty namespace."""
    listed = {"conversation": 0, "checkpointer session": 0}
    read, sealed, damaged = 0, 0, []
    decoder = _checkpoint_decoder()
    for session_id in store.sessions():
        if session_id.startswith(_ITEMS):
            continue
        kind = ("checkpointer session" if session_id.startswith(_CHECKPOINTS)
                else "conversation")
        listed[kind] += 1
        if listed[kind] > SESSIONS:
            continue
        read += 1
        try:
            messages = store.session(session_id).read(last=ENTRIES).messages
            if kind != "conversation" and decoder is not None:
                decoder(session_id, messages)
        except CorruptEntryError as exc:
            if isinstance(exc, EncryptionKeyError) and store.options.encryption is None:
                sealed += 1  # sealed, and no keyring here to open it: not judged
                continue
            damaged.append(f"{_named(session_id)}: {exc.reason} (seq {exc.seq})")
    return _verdict(listed, read, sealed, damaged, decoder is not None)


def _verdict(listed: dict[str, int], read: int, sealed: int, damaged: list[str],
             decoded: bool) -> Check | None:
    if not read:
        return None
    if damaged:
        return Check("entries", "fail", f"{len(damaged)} of {read} session(s) sampled hold "
                     f"entries that cannot be decoded: {'; '.join(damaged[:3])}", len(damaged))
    kinds = ", ".join(f"{n} {kind}(s)" for kind, n in listed.items() if n)
    capped = f" (the first {SESSIONS} of each kind)" if max(listed.values()) > SESSIONS else ""
    notes = [f"{sealed} sealed, not opened without the keyring"] if sealed else []
    if listed["checkpointer session"] and not decoded:
        notes.append("checkpoints read, not decoded: LangGraph is not installed")
    return Check("entries", "ok", f"the newest {ENTRIES} entries of {kinds}{capped} decode"
                 + "".join(f"; {note}" for note in notes), read)


def _checkpoint_decoder() -> Decoder | None:
    try:
        from ..langgraph._entries import decode  # noqa: PLC0415 -- an optional extra
        from ..langgraph._parts import join  # noqa: PLC0415
    except ImportError:
        return None

    def decoded(session_id: str, messages: list[Message]) -> None:
        try:
            whole, _ = join(messages)  # an entry whose parts lie before the window: skipped
        except ValueError as exc:
            raise CorruptEntryError(session_id, messages[0].seq or 0, str(exc)) from exc
        for message in whole:
            decode(session_id, message)
    return decoded


def _named(session_id: str) -> str:
    """A checkpointer session as its thread and namespace, a conversation as its id."""
    if not session_id.startswith(_CHECKPOINTS):
        return f"conversation {session_id!r}"
    try:
        from ..langgraph._layout import split_session_id, thread_words  # noqa: PLC0415
    except ImportError:
        return f"checkpointer session {session_id!r}"
    split = split_session_id(session_id)
    if split is None:  # a thread's index of its namespaces
        return f"checkpointer session {session_id!r}"
    return thread_words(*split)
