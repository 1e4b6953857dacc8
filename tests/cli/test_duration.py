"""The one way a time left is written, by `chatledger sessions`/`show` and the inspector."""

from __future__ import annotations

import pytest

from chatledger._text import duration


@pytest.mark.parametrize(("seconds", "written"), [
    (None, "never"),
    (0, "0s"),
    (-5.0, "0s"),  # an expiry already past
    (59.9, "59s"),
    (3600, "1h"),
    (3 * 86400 + 5 * 3600 + 7 * 60 + 9, "3d 5h"),  # the two largest units
    (7 * 60 + 9, "7m 9s"),
    (86400 + 9, "1d 9s"),
])
def test_a_duration_is_written_in_its_two_largest_units(seconds: float | None,
                                                         written: str) -> None:
    assert duration(seconds) == written
