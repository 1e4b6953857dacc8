"""``check_key``: an ASCII key passes in one test, and is refused in the same words as before."""

from __future__ import annotations

import pytest

from chatledger._validation import MAX_KEY_BYTES, check_key


@pytest.mark.parametrize("key", ["a", "lg:5:bench:", "x" * MAX_KEY_BYTES, "\x7f"])
def test_an_ascii_key_within_bounds_is_returned_as_it_is(key: str) -> None:
    assert check_key(key, "session id") is key


@pytest.mark.parametrize(("key", "options", "error", "words"), [
    ("", {}, ValueError, "session id must not be empty"),
    ("a\x00b", {}, ValueError, "contains a NUL character"),
    ("x" * (MAX_KEY_BYTES + 1), {}, ValueError, f"over {MAX_KEY_BYTES:,}"),
    ("abcd", {"most": 3}, ValueError, "is 4 bytes of UTF-8, over 3"),
    ("é" * MAX_KEY_BYTES, {}, ValueError, "bytes of UTF-8, over"),  # not ASCII: counted in bytes
    ("a\ud83d", {}, ValueError, "lone surrogate"),
])
def test_a_key_out_of_bounds_is_refused(key: str, options: dict[str, int], error: type,
                                         words: str) -> None:
    with pytest.raises(error, match=words):
        check_key(key, "session id", **options)  # type: ignore[arg-type]


def test_the_options_widen_what_an_ascii_key_may_be() -> None:
    assert check_key("", "prefix", empty=True) == ""
    assert check_key("a\x00b", "text", nul=True) == "a\x00b"
    assert check_key("x" * (MAX_KEY_BYTES + 1), "task_id", most=None) == "x" * (MAX_KEY_BYTES + 1)
    with pytest.raises(TypeError, match="must be a str, got int"):
        check_key(3, "session id")
