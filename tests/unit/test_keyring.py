"""The keyring: its checks, and what it never shows."""

from __future__ import annotations

import base64
import pickle
import sys

import pytest

from chatledger import ConfigError, CorruptEntryError, EncryptionKeyError, Keyring, open_store
from chatledger._codec import encode
from chatledger._crypto import sealed_key_id, unseal
from chatledger._messages import user

KEY = Keyring.new_key()


def test_a_keyring_is_refused_for_a_missing_current_id_a_short_key_or_a_bad_id() -> None:
    with pytest.raises(ConfigError, match="current key id 'b' is not among"):
        Keyring({"a": KEY}, current="b")
    with pytest.raises(ConfigError, match=r"'a' must be 32 bytes \(AES-256\), got 16") as caught:
        Keyring({"a": KEY[:16]}, current="a")
    assert KEY[:16].hex() not in str(caught.value)
    with pytest.raises(ConfigError, match=r"must be 32 bytes \(AES-256\), got str"):
        Keyring({"a": "x" * 32}, current="a")  # type: ignore[dict-item]
    for bad in ("", "x" * 256, "\ud800"):
        with pytest.raises(ConfigError, match="a key id must be text of 1 to 255"):
            Keyring({bad: KEY}, current=bad)


def test_a_keyring_shows_its_ids_never_its_keys() -> None:
    keyring = Keyring({"b": KEY, "a": Keyring.new_key()}, current="b")
    assert repr(keyring) == "Keyring(key_ids=['a', 'b'], current='b')"
    assert KEY.hex() not in repr(keyring) and repr(KEY) not in repr(keyring)


def test_without_cryptography_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    hint = r'pip install -e "\.\[crypto\]" in a chatledger checkout'
    with pytest.raises(ConfigError, match=hint):
        Keyring({"a": KEY}, current="a")


def test_sealed_entries_name_their_key_and_clear_ones_are_refused_by_a_keyring() -> None:
    keyring = Keyring({"k9": KEY}, current="k9")
    clear = encode(user("hi"))
    sealed = keyring.seal("ns", "s", "L1", 1, clear)
    assert (sealed_key_id("s", 1, sealed), sealed_key_id("s", 2, clear)) == ("k9", None)
    assert unseal(None, "ns", "s", "L1", (1, clear)) == clear
    assert unseal(keyring, "ns", "s", "L1", (1, sealed)) == clear
    assert unseal(keyring, "ns", "s", "L1", (1, clear), allow_plaintext=True) == clear
    with pytest.raises(EncryptionKeyError, match=r"seq=1 .*stored in the clear"):
        unseal(keyring, "ns", "s", "L1", (1, clear))
    assert keyring.seal("ns", "s", "L1", 1, clear) != sealed  # a fresh nonce each time
    # Each part of the place is authenticated, without ambiguity between them.
    for place in (("n", "ss", "L1", 1), ("ns", "s", "L2", 1), ("ns", "s", "L1", 2),
                  ("ns", "sL", "1", 1), ("", "nss", "L1", 1)):
        with pytest.raises(EncryptionKeyError, match="moved here from another place"):
            keyring.open(*place, sealed)


@pytest.mark.parametrize("blob", [b"\x03", b"\x03\x00" + bytes(20), b"\x03\x05ab",
                                  b"\x03\x02\xff\xfe" + bytes(20)])
def test_a_sealed_head_that_cannot_be_read_is_a_corrupt_entry(blob: bytes) -> None:
    with pytest.raises(CorruptEntryError, match=r"seq=4 .*sealed entry") as caught:
        unseal(Keyring({"a": KEY}, current="a"), "ns", "s", "L", (4, blob))
    assert not isinstance(caught.value, EncryptionKeyError)


def test_the_key_error_travels_with_its_key_id() -> None:
    error = pickle.loads(pickle.dumps(EncryptionKeyError("s", 3, "no key", "k1")))
    assert (error.session, error.seq, error.key_id, str(error)) == (
        "s", 3, "k1", "session 's': entry seq=3 cannot be decoded: no key")


def test_a_keyring_is_parsed_from_text_the_first_key_current() -> None:
    old = Keyring.new_key()
    text = f" b={base64.b64encode(KEY).decode()} , a={base64.b64encode(old).decode()},"
    keyring = Keyring.parse(text)
    assert (keyring.current, keyring.key_ids) == ("b", ["a", "b"])
    sealed = Keyring({"a": old}, current="a").seal("ns", "s", "L", 1, b"\x01{}")
    assert keyring.open("ns", "s", "L", 1, sealed) == b"\x01{}"
    for bad in ("", " , "):
        with pytest.raises(ConfigError, match="holds no id=BASE64KEY pair"):
            Keyring.parse(bad)


@pytest.mark.parametrize(("text", "words"), [
    (f"a={base64.b64encode(KEY).decode()},b", r"^pair 2 of 2 of the keyring text is not "
                                              r"id=BASE64KEY"),
    (f"a={base64.b64encode(KEY).decode()},a={base64.b64encode(KEY).decode()}",
     r"^pair 2 of 2 .* repeats the key id of an earlier pair"),
    ("a=QUJD", r"^pair 1 of 1 of the keyring text: its key is 3 bytes, not 32 \(AES-256\)"),
    ("a=QUJD!", r"^pair 1 of 1 of the keyring text: its key is not standard base64"),
    (f"{'x' * 256}={base64.b64encode(KEY).decode()}",
     r"^pair 1 of 1 .*: its key id is not text of 1 to 255 UTF-8 bytes"),
], ids=["no-id", "id-twice", "short", "not-base64", "long-id"])  # the key is random: no id
def test_a_pair_written_wrong_is_named_by_its_place_never_its_text(text: str,
                                                                    words: str) -> None:
    with pytest.raises(ConfigError, match=words) as refused:
        Keyring.parse(text)
    assert base64.b64encode(KEY).decode()[:16] not in str(refused.value)


@pytest.mark.parametrize("size", [100, 100_000])  # kept among the recent entries, and not
def test_an_entry_opened_before_and_then_altered_is_refused_not_remembered(size: int) -> None:
    ring = Keyring({"a": Keyring.new_key()}, current="a")
    sealed = ring.seal("ns", "s", "L", 1, b"x" * size)
    assert ring.open("ns", "s", "L", 1, sealed) == b"x" * size
    assert ring.open("ns", "s", "L", 1, bytes(bytearray(sealed))) == b"x" * size  # equal bytes
    altered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(EncryptionKeyError, match="does not open with key id 'a'"):
        ring.open("ns", "s", "L", 1, altered)
    with pytest.raises(EncryptionKeyError):  # the same bytes in another session
        ring.open("ns", "other", "L", 1, sealed)
    with pytest.raises(EncryptionKeyError):  # or at another seq, once opened at its own
        ring.open("ns", "s", "L", 2, sealed)


def test_allow_plaintext_is_a_store_option_and_a_url_option() -> None:
    ring = Keyring({"a": KEY}, current="a")
    assert open_store("memory://", encryption=ring).options.allow_plaintext is False
    assert open_store("memory://?allow_plaintext=true", encryption=ring).options.allow_plaintext
    assert open_store("memory://", encryption=ring, allow_plaintext=True).options.allow_plaintext
    with pytest.raises(ConfigError, match=r"allow_plaintext=.maybe. is not a boolean"):
        open_store("memory://?allow_plaintext=maybe")
    with pytest.raises(ConfigError, match="allow_plaintext must be a bool, got 1"):
        open_store("memory://", allow_plaintext=1)
