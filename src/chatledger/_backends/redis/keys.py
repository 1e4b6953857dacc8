"""Where a session lives in Redis: key names, and the patterns that find them.

Layout (``<ns>`` and ``<sid>`` are the namespace and session id, escaped as
below)::

    chatledger:{<ns>:<sid>}:meta   HASH  version, first_seq, created, updated, expires, ledger
    chatledger:{<ns>:<sid>}:log    LIST  the stored entries; index i holds seq first_seq + i
    chatledger:{<ns>:<sid>}:ids    HASH  message id -> "seq:batch_first:batch_last" (every
                                         id ever stored, trimmed ones included, until the
                                         session is deleted or expires); a UUID id is
                                         named by 0xFF and its 16 bytes (calls.index_key)

All three keys carry the same hash tag ``{<ns>:<sid>}``, so one script can
touch them all on Redis Cluster too, and all three always get the same expiry.

The user index, one SET per user of a namespace (``<uid>`` escaped as ids are)::

    chatledger:{<ns>:user:<uid>}:sessions   SET  the ids of the user's sessions

Its tag holds two unescaped colons, so it is never a session's tag, and no
session pattern matches it; it lies in the namespace's ACL key pattern. It
has a slot of its own: on Redis Cluster a user's sessions are spread over the
nodes, so no script touches the index and a session together (see
``_async/users.py`` for the order that keeps them consistent).

Why a LIST for the entries. Seqs are dense (``first_seq .. version``, no
gaps: trims only cut the front), so a seq's list index is ``seq - first_seq``
and needs no lookup structure. Appends are RPUSH, trims are LTRIM from the
front (O(dropped)), and a window is one LRANGE: ``read(last=N)`` starts N
from the tail, which costs O(N); ``read(after=S)`` starts wherever S is, and
Redis seeks from the nearer end by whole quicklist nodes (each packs many
entries), so the usual windows, near the tail, are O(window) too. A HASH
seq -> entry would make every position O(1) but costs ~60 bytes more per
entry and a field per seq to delete on trim; a sorted set would need unique
members and still pay O(log n) per seek. The list is also what a human sees
with ``LRANGE`` when debugging.

Escaping. A namespace or session id is any text. Four characters are
percent-encoded in key names: ``%`` (the escape itself), ``{`` and ``}`` (they
would end or restart the hash tag) and ``:`` (the separator between namespace
and session id). So the tag is unambiguous (namespace ``a:b`` with session
``c`` is ``{a%3Ab:c}``, namespace ``a`` with session ``b:c`` is ``{a:b%3Ac}``)
and a session id never leaves its tag. Everything else, non-ASCII included,
stays as it is (UTF-8), so keys remain readable in ``redis-cli``. The encoding
is a prefix code: an id starts with a prefix exactly when its escaped form
starts with the escaped prefix, which is what SCAN patterns rely on.

Glob characters (``* ? [ ] \\``) are not escaped in key names; they are
escaped in SCAN ``MATCH`` patterns, where they would mean something.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["KEY_PREFIX", "SessionKeys", "escape", "glob_escape", "meta_pattern", "session_of",
           "unescape", "user_index_key"]

KEY_PREFIX = "chatledger:"
_META_SUFFIX = "}:meta"
_SUFFIXES = (_META_SUFFIX, "}:log", "}:ids")
_ANY_SUFFIX = "}:*"
_ESCAPED = "%{}:"
_ESCAPES = str.maketrans({char: f"%{ord(char):02X}" for char in _ESCAPED})
_UNESCAPES = {f"%{ord(char):02X}": char for char in _ESCAPED}
_ESCAPE_RE = re.compile("%(?:" + "|".join(code[1:] for code in _UNESCAPES) + ")")
_GLOB_RE = re.compile(r"([*?\[\]\\])")


def escape(text: str) -> str:
    """Text as it appears inside a key's hash tag."""
    return text.translate(_ESCAPES)


def unescape(text: str) -> str | None:
    """The text that :func:`escape` turned into ``text``; None if no text could have."""
    if "%" in _ESCAPE_RE.sub("", text) or any(char in text for char in "{}:"):
        return None
    return _ESCAPE_RE.sub(lambda match: _UNESCAPES[match.group()], text)


def glob_escape(text: str) -> str:
    """Text matched literally by a Redis glob pattern (SCAN MATCH, KEYS)."""
    return _GLOB_RE.sub(r"\\\1", text)


@dataclass(frozen=True)
class SessionKeys:
    """The three keys of one session, in the order the scripts take them."""

    meta: bytes
    log: bytes
    ids: bytes
    # The three as a script's KEYS: one tuple per (cached) session, not one per call.
    all: tuple[bytes, bytes, bytes] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all", (self.meta, self.log, self.ids))

    @classmethod
    def of(cls, namespace: str, session: str) -> SessionKeys:
        return _session_keys(namespace, session)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.all)


@lru_cache(maxsize=4096)  # a turn names its session twice (read, append): escape once
def _session_keys(namespace: str, session: str) -> SessionKeys:
    tag = f"{KEY_PREFIX}{{{escape(namespace)}:{escape(session)}}}"
    return SessionKeys(*(f"{tag}:{part}".encode() for part in ("meta", "log", "ids")))


def user_index_key(namespace: str, user: str) -> bytes:
    """The SET of the ids of ``user``'s sessions in ``namespace``."""
    return f"{KEY_PREFIX}{{{escape(namespace)}:user:{escape(user)}}}:sessions".encode()


def meta_pattern(namespace: str, prefix: str, *, every_key: bool = False) -> bytes:
    """A SCAN MATCH pattern for the meta keys of sessions starting with ``prefix``.

    ``every_key``: all three keys instead, so that what eviction left of a
    session (a log without its meta) is found too.
    """
    head = glob_escape(f"{KEY_PREFIX}{{{escape(namespace)}:{escape(prefix)}")
    return f"{head}*{_ANY_SUFFIX if every_key else _META_SUFFIX}".encode()


def session_of(key: bytes, namespace: str, prefix: str, *, every_key: bool = False) -> str | None:
    """The session whose meta key (or any key) is ``key``, if it starts with ``prefix``.

    SCAN patterns are only trusted to narrow the search: the key is decoded and
    checked here, so a key that merely matches the pattern is never taken.
    """
    head = f"{KEY_PREFIX}{{{escape(namespace)}:"
    try:
        text = key.decode()
    except UnicodeDecodeError:
        return None
    suffixes = _SUFFIXES if every_key else (_META_SUFFIX,)
    suffix = next((end for end in suffixes if text.endswith(end)), None)
    if suffix is None or not text.startswith(head):
        return None
    session = unescape(text[len(head) : -len(suffix)])
    if session is None or not session.startswith(prefix):
        return None
    return session
