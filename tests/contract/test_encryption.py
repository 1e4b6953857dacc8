"""Encryption at rest, on every backend: what a backend holds is sealed, what
the store returns is exact, and an entry it cannot open is a loud error naming
the key id."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from chatledger import (
    ConfigError,
    CorruptEntryError,
    EncryptionKeyError,
    Keyring,
    Message,
    Store,
    assistant,
    user,
)
from chatledger._codec import encode
from chatledger._core import make_query
from tests.backends import BackendCase
from tests.conftest import OpenLedger

KEY_A, KEY_B = Keyring.new_key(), Keyring.new_key()


def ring(current: str = "a", **keys: bytes) -> Keyring:
    return Keyring(keys or {"a": KEY_A}, current=current)


def secret_messages(marker: str) -> list[Message]:
    """A message of every kind, each field holding ``marker``."""
    return [
        user(f"my card is {marker}", name=f"name-{marker}", metadata={"note": marker}),
        assistant([{"type": "text", "text": marker}],
                  tool_calls=[{"id": "c1", "name": "lookup", "args": {"q": marker}}]),
        Message(role="user", content="", data=f"bytes-{marker}".encode(), metadata={"kind": "b"}),
    ]


def raw_entries(store: Any, session: str) -> list[bytes]:
    """The blobs the backend holds for ``session``, as it holds them."""
    return [bytes(blob) for _, blob in store._backend.read(session, make_query(None, None, None))
            .entries]


def test_what_the_backend_holds_has_no_plaintext_and_reads_back_exact(
    open_ledger: OpenLedger,
) -> None:
    marker = f"4111-{uuid.uuid4().hex}"
    store = open_ledger(encryption=ring())
    sent = secret_messages(marker)
    ack = store.session("s").append(sent)
    assert (ack.first_seq, ack.last_seq, ack.redacted) == (1, 3, 0)
    got = store.session("s").read().messages
    assert got == sent and [m.seq for m in got] == [1, 2, 3]
    blobs = raw_entries(store, "s")
    assert len(blobs) == 3
    for blob in blobs:
        assert blob[:3] == b"\x03\x01a"  # sealed, key id "a" in the clear
        assert marker.encode() not in blob and b"4111" not in blob


def test_keys_rotate_old_entries_open_new_ones_use_the_current_key(
    open_ledger: OpenLedger,
) -> None:
    old = open_ledger(encryption=ring())
    old.session("s").append([user("written under a")])
    new = open_ledger(namespace=old.namespace, encryption=ring("b", a=KEY_A, b=KEY_B))
    new.session("s").append([user("written under b")])
    assert [m.text for m in new.session("s").read().messages] == [
        "written under a", "written under b"]
    assert [blob[2:3] for blob in raw_entries(new, "s")] == [b"a", b"b"]
    # A store that has only the old key reads the old entry and names the new key.
    with pytest.raises(EncryptionKeyError) as caught:
        old.session("s").read()
    assert (caught.value.session, caught.value.seq, caught.value.key_id) == ("s", 2, "b")
    assert "'b'" in str(caught.value) and "['a']" in str(caught.value)
    assert [m.text for m in old.session("s").read(limit=1).messages] == ["written under a"]


def test_a_store_without_the_keyring_names_the_key_and_never_reads_empty(
    open_ledger: OpenLedger,
) -> None:
    sealed = open_ledger(encryption=ring())
    sealed.session("s").append([user("hello")])
    plain = open_ledger(namespace=sealed.namespace)
    with pytest.raises(EncryptionKeyError) as caught:
        plain.session("s").read()
    assert caught.value.key_id == "a" and "encryption=Keyring" in str(caught.value)
    info = plain.session("s").info()  # ids, seqs and versions stay clear
    assert info is not None and info.version == 1


def test_a_wrong_key_under_the_right_id_is_an_error_naming_it(open_ledger: OpenLedger) -> None:
    open_ledger(encryption=ring()).session("s").append([user("hello")])
    wrong = open_ledger(namespace=open_ledger().namespace, encryption=ring(a=KEY_B))
    with pytest.raises(EncryptionKeyError, match="does not open with key id 'a'") as caught:
        wrong.session("s").read()
    assert caught.value.key_id == "a"
    assert KEY_A.hex() not in str(caught.value) and KEY_B.hex() not in str(caught.value)


def test_entries_written_in_the_clear_are_refused_unless_plaintext_is_allowed(
    open_ledger: OpenLedger,
) -> None:
    plain = open_ledger()
    plain.session("s").append([user("before")])
    sealed = open_ledger(namespace=plain.namespace, encryption=ring())
    sealed.session("s").append([user("after")])
    with pytest.raises(EncryptionKeyError, match="stored in the clear") as caught:
        sealed.session("s").read()
    assert (caught.value.session, caught.value.seq) == ("s", 1)
    assert [m.text for m in sealed.session("s").read(after=1).messages] == ["after"]
    window = open_ledger(namespace=plain.namespace, encryption=ring(), allow_plaintext=True)
    assert [m.text for m in window.session("s").read().messages] == ["before", "after"]
    assert window.rotate_key().encrypted == 1  # the migration window ends
    assert [m.text for m in sealed.session("s").read().messages] == ["before", "after"]


@pytest.mark.parametrize("tamper", ["flip", "moved", "truncated"])
def test_a_tampered_entry_raises_corrupt_entry_for_its_seq(
    backend: BackendCase, store: Store, open_ledger: OpenLedger, tamper: str,
) -> None:
    keyring = ring()
    sealed_store = open_ledger(namespace=store.namespace, encryption=keyring)
    session = sealed_store.session("s")
    session.append([user(f"m{i}") for i in range(1, 4)])
    # A blob sealed for another session, or altered, or cut short.
    info = session.info()
    assert info is not None
    blob = keyring.seal(store.namespace, "other" if tamper == "moved" else "s", info.ledger, 2,
                        encode(user("forged")))
    blob = {"flip": blob[:-1] + bytes([blob[-1] ^ 1]), "moved": blob, "truncated": blob[:6]}[tamper]
    backend.corrupt(sealed_store, "s", 2, blob)
    with pytest.raises(CorruptEntryError) as caught:
        session.read()
    assert (caught.value.session, caught.value.seq) == ("s", 2)
    assert [m.text for m in session.read(after=2).messages] == ["m3"]


def test_a_keyring_is_checked_when_the_store_opens(open_ledger: OpenLedger) -> None:
    with pytest.raises(ConfigError, match=r"must be a chatledger\.Keyring"):
        open_ledger(encryption={"a": KEY_A})


def test_budgeted_reads_and_compaction_open_sealed_entries(open_ledger: OpenLedger) -> None:
    """Pages read from the newest end are opened with the keyring, the first
    and every one after it; the summary is sealed like any entry."""
    store = open_ledger(encryption=ring())
    session = store.session("s")
    session.append([user(f"secret {i}") for i in range(300)])  # more than one page
    assert [m.text for m in session.read(max_tokens=30)][-1] == "secret 299"
    assert len(session.read(max_tokens=10**6)) == 300
    ack = session.maybe_compact(lambda ms: f"{len(ms)} secrets", trigger_tokens=100,
                                keep_tokens=20)
    assert ack is not None
    history = session.read(with_summary=True)
    assert history.summary is not None and history.summary.text.endswith(" secrets")
    assert all(b"secrets" not in blob for blob in raw_entries(store, "s"))
