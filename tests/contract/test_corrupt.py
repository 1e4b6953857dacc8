"""Promise 7, second half: an undecodable stored entry is reported, never hidden."""

from __future__ import annotations

import pytest

from chatledger import CorruptEntryError, Store, user
from tests.backends import BackendCase


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [
        (b"\x01{not json", "its bytes are not valid JSON (unexpected character"),
        (b"\x01\xff\xff", "its bytes are not valid JSON (str is not valid UTF-8"),
        (b"\x7f{}", "unknown format byte"),
        (b"\x03{}", "sealed entry: the head is truncated"),  # 0x03: encrypted entries
        # Entries with data (FORMAT_V2): a head, then that many bytes of JSON, then the data.
        (b"\x02{}", "shorter than the 5-byte head"),
        (b"\x02\x00\x00\x01\x00{}data", "announces 256 bytes of JSON, 6 follow it"),
        (b"\x02\x00\x00\x00\x02{}data", "'r'"),
        (b"\x02\x00\x00\x00\x03[1]data", "not an object"),
        (b"", "unknown format byte"),
        (b'\x01["a list"]', "not an object"),
        (b'\x01{"r": "user"}', "'c'"),
        (b'\x01{"r": "robot", "c": "x", "i": "1", "t": "2026-01-01T00:00:00"}', "bad role"),
        (b'\x01{"r": "user", "c": 5, "i": "1", "t": "2026-01-01T00:00:00"}', "content is an int"),
        (b'\x01{"r": "user", "c": "x", "i": "1", "t": "noon"}', "Invalid isoformat"),
    ],
)
def test_a_garbage_entry_raises_corrupt_entry_for_its_seq(
    backend: BackendCase, store: Store, garbage: bytes, reason: str
) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 6)])
    backend.corrupt(store, "s", 3, garbage)
    with pytest.raises(CorruptEntryError) as caught:
        session.read()
    assert (caught.value.session, caught.value.seq) == ("s", 3)
    assert reason in str(caught.value)
    # The rest of the history stays readable around the bad entry.
    assert [m.text for m in session.read(limit=2)] == ["m1", "m2"]
    assert [m.text for m in session.read(after=3)] == ["m4", "m5"]
    assert [m.seq for m in session.read(last=2)] == [4, 5]
    # Trimming past it heals the session.
    session.trim(keep_last=2)
    assert [m.text for m in session.read()] == ["m4", "m5"]
