"""Encryption at rest: each stored entry sealed with AES-256-GCM, bound to its place.

A sealed entry is the codec's entry (:mod:`chatledger._codec`, format byte and
all) encrypted whole, behind a clear head::

    0x03 | key id length (1 byte) | key id (UTF-8) | nonce (12 bytes) | ciphertext + tag

So the message's content, name, tool calls, metadata, data bytes, role, id
and ``created_at`` are all inside the ciphertext; what stays clear is what the
backends keep beside the entry (message ids, seqs, versions, ledger ids, the
session's times) and the key id. The authenticated data is the head plus the
entry's place: namespace, session id, ledger id and seq (:class:`Place` says
how an append knows them before the backend assigns them). An entry altered,
or copied to another seq, session, namespace or incarnation of the session
id, fails to open.

Fails closed: a store with a keyring refuses an entry stored in the clear
(:class:`~chatledger.EncryptionKeyError`), unless it was opened with
``allow_plaintext=True`` for the window in which ``rotate-key`` seals what
was written before encryption was turned on.

Rotation: a :class:`Keyring` seals with its ``current`` key and opens entries
sealed with any key it holds.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import os
from collections.abc import Mapping
from typing import Any

from ._errors import ConfigError, CorruptEntryError, EncryptionKeyError
from ._wording import install_hint

__all__ = ["FORMAT_SEALED", "OVERHEAD", "Keyring", "sealed_key_id", "unseal"]

FORMAT_SEALED = b"\x03"
_SEALED = FORMAT_SEALED[0]
KEY_BYTES = 32  # AES-256
_NONCE = 12
_TAG = 16
_RECENT, _RECENT_BYTES = 512, 8 * 1024  # opened entries kept, and the largest kept
OVERHEAD = 2 + _NONCE + _TAG
"""What sealing adds to an entry, besides its key id's bytes."""


class Keyring:
    """The keys a store encrypts with: ``Keyring({"2026-12": key}, current="2026-12")``.

    Each key is 32 random bytes (``Keyring.new_key()`` makes one); the key ids
    are short names (1 to 255 UTF-8 bytes) stored beside every entry, so keep
    old keys in the ring under their ids for as long as entries sealed with
    them remain (``chatledger`` never stores a key). New entries are sealed with
    ``current``.
    """

    def __init__(self, keys: Mapping[str, bytes], current: str) -> None:
        aead = _aead_class()
        if current not in keys:
            raise ConfigError(f"the current key id {current!r} is not among the keyring's "
                              f"ids {sorted(keys)}")
        self._ciphers = {key_id: aead(_checked_key(key_id, key)) for key_id, key in keys.items()}
        self.current = current
        self._head = _head(current)
        # A sealed entry's head (format, id length, id) straight to its key: no
        # decoding of the id on the read path, which opens a window of entries.
        self._by_head = {_head(key_id): (key_id, cipher)
                         for key_id, cipher in self._ciphers.items()}
        self._sealer = self._ciphers[current]
        # The entries opened lately, by their exact sealed bytes and place: a
        # turn reads a window that is mostly the previous turn's, and the same
        # authenticated ciphertext can only open to the same bytes (an altered
        # entry is other bytes, so it is opened, and refused, afresh). Holds
        # plaintext this process has read already; bounded in count and size.
        self._recent = functools.lru_cache(maxsize=_RECENT)(self._decrypt)

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._ciphers)

    @classmethod
    def parse(cls, text: str) -> Keyring:
        """A keyring from text such as ``"2026-12=BASE64KEY,2026-06=BASE64KEY"``
        (an environment variable's value): ``id=key`` pairs, each key the
        standard base64 of 32 bytes, the first pair the current key. Errors name
        a pair by its place in the text and quote none of it: a pair written
        wrong (a key with no id, ``KEY=id``, ``id:KEY``) may hold the key where
        the id should be."""
        keys: dict[str, bytes] = {}
        pairs = [p.strip() for p in text.split(",") if p.strip()]
        for number, pair in enumerate(pairs, 1):
            where = f"pair {number} of {len(pairs)} of the keyring text"
            key_id, sep, encoded = (part.strip() for part in pair.partition("="))
            if not sep or not key_id or not encoded:
                raise ConfigError(f"{where} is not id=BASE64KEY (a keyring is such pairs, "
                                  f"separated by commas)")
            if key_id in keys:
                raise ConfigError(f"{where} repeats the key id of an earlier pair")
            keys[key_id] = _parsed_key(where, key_id, encoded)
        if not keys:
            raise ConfigError("the keyring text holds no id=BASE64KEY pair")
        return cls(keys, current=next(iter(keys)))

    @staticmethod
    def new_key() -> bytes:
        """32 bytes from the operating system's random source."""
        return os.urandom(KEY_BYTES)

    def seal(self, namespace: str, session: str, ledger: str, seq: int, blob: bytes) -> bytes:
        """``blob`` (a codec entry) sealed with the current key for its place:
        entry ``seq`` of ledger ``ledger`` of ``session`` in ``namespace``."""
        nonce = os.urandom(_NONCE)  # random 96-bit nonces: safe for 2**32 entries per key
        aad = _aad(self._head, namespace, session, ledger) + seq.to_bytes(8, "big")
        return b"".join((self._head, nonce, self._sealer.encrypt(nonce, blob, aad)))

    def open(self, namespace: str, session: str, ledger: str, seq: int, blob: bytes) -> bytes:
        """The codec entry inside a sealed ``blob`` read at that place, or
        :class:`EncryptionKeyError` (altered, moved, or a key this ring lacks)."""
        if len(blob) <= _RECENT_BYTES:
            return self._recent(blob, namespace, session, ledger, seq)
        return self._decrypt(blob, namespace, session, ledger, seq)

    def _decrypt(self, blob: bytes, namespace: str, session: str, ledger: str,
                 seq: int) -> bytes:
        start = 2 + (blob[1] if len(blob) > 1 else 0)
        head = blob[:start]
        found = self._by_head.get(head) if len(blob) >= start + _NONCE else None
        if found is None:  # cut short, or a key this ring lacks: the error says which
            key_id = read_head(session, seq, blob)[0]
            raise EncryptionKeyError(session, seq, f"it is encrypted with key id {key_id!r}, which "
                               f"this store's keyring does not hold (it holds "
                               f"{self.key_ids})", key_id)
        key_id, cipher = found
        view = memoryview(blob)  # slices of it are not copies of the entry
        try:
            aad = _aad(head, namespace, session, ledger) + seq.to_bytes(8, "big")
            return bytes(cipher.decrypt(view[start:start + _NONCE], view[start + _NONCE:], aad))
        except Exception as exc:  # cryptography's InvalidTag, or a too-short entry
            raise EncryptionKeyError(session, seq, f"it does not open with key id {key_id!r}: "
                               f"the key under that id is not the one it was sealed "
                               f"with, or the entry was altered or moved here from "
                               f"another place", key_id) from exc

    def __repr__(self) -> str:  # never the keys
        return f"Keyring(key_ids={self.key_ids}, current={self.current!r})"


def unseal(keyring: Keyring | None, namespace: str, session: str, ledger: str,
           entry: tuple[int, bytes], *, allow_plaintext: bool = False) -> bytes:
    """The codec entry of ``entry``, a (seq, blob) of ledger ``ledger``: opened if
    sealed; if not, as it is when the store has no keyring (or allows
    plaintext), else refused."""
    seq, blob = entry
    if not blob or blob[0] != _SEALED:
        if keyring is None or allow_plaintext:
            return blob
        raise EncryptionKeyError(session, seq, "it is stored in the clear and this store "
                                 "encrypts: refused, as anyone who can write the database "
                                 "could have put it there (entries written before "
                                 "encryption was turned on: open the store with "
                                 "allow_plaintext=True and run rotate-key)")
    if keyring is None:
        key_id = read_head(session, seq, blob)[0]
        raise EncryptionKeyError(session, seq, f"it is encrypted with key id {key_id!r} and this "
                           f"store has no keyring: open it with "
                           f"encryption=Keyring(...) holding that key", key_id)
    return keyring.open(namespace, session, ledger, seq, blob)


def sealed_key_id(session: str, seq: int, blob: bytes) -> str | None:
    """The key id of a sealed entry, None for an entry stored in the clear;
    CorruptEntryError naming the entry when its head is cut short."""
    if blob[:1] != FORMAT_SEALED:
        return None
    return read_head(session, seq, blob)[0]


def read_head(session: str, seq: int, blob: bytes) -> tuple[str, int]:
    """(key id, where the nonce starts) of a sealed entry."""
    size = blob[1] if len(blob) > 1 else 0
    try:
        if size == 0 or len(blob) < 2 + size + _NONCE:
            raise ValueError("the head is truncated")
        return bytes(blob[2:2 + size]).decode(), 2 + size
    except ValueError as exc:
        raise CorruptEntryError(session, seq, f"sealed entry: {exc}") from None


def _head(key_id: str) -> bytes:
    encoded = key_id.encode()
    return FORMAT_SEALED + bytes([len(encoded)]) + encoded


@functools.lru_cache(maxsize=4096)
def _aad(head: bytes, namespace: str, session: str, ledger: str) -> bytes:
    """The authenticated data of an entry of ``ledger``, but for its seq (8 bytes
    after it). Lengths first so that ("ab", "c") and ("a", "bc") never
    authenticate alike. Cached: a read opens a window of one ledger under one key."""
    parts = [part.encode("utf-8", "surrogatepass") for part in (namespace, session, ledger)]
    return b"".join((head, *(b"".join((len(p).to_bytes(4, "big"), p)) for p in parts)))


def _parsed_key(where: str, key_id: str, encoded: str) -> bytes:
    """The key of a pair of the keyring text, its errors naming the pair, not its text."""
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where}: its key is not standard base64") from None
    if len(key) != KEY_BYTES:
        raise ConfigError(f"{where}: its key is {len(key)} bytes, not {KEY_BYTES} (AES-256)")
    if not _id_size_ok(key_id):
        raise ConfigError(f"{where}: its key id is not text of 1 to 255 UTF-8 bytes")
    return key


def _id_size_ok(key_id: object) -> bool:
    try:
        size = len(key_id.encode()) if isinstance(key_id, str) else 0
    except UnicodeEncodeError:  # a lone surrogate
        size = 0
    return 1 <= size <= 255


def _checked_key(key_id: object, key: object) -> bytes:
    if not _id_size_ok(key_id):
        raise ConfigError(f"a key id must be text of 1 to 255 UTF-8 bytes, got {key_id!r}")
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        # The message names the id and the length, never the key's bytes.
        got = len(key) if isinstance(key, bytes) else type(key).__name__
        raise ConfigError(f"key {key_id!r} must be {KEY_BYTES} bytes (AES-256), got {got}")
    return key


def _aead_class() -> Any:
    try:  # imported when a keyring is made: an optional extra
        aead = importlib.import_module("cryptography.hazmat.primitives.ciphers.aead")
    except ImportError:
        raise ConfigError("encryption needs the cryptography package: "
                          f"{install_hint('crypto')}") from None
    return aead.AESGCM
