"""Time-ordered message ids (UUIDv7, RFC 9562)."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def new_id() -> str:
    """Return a new UUIDv7 as text; ids made in one process sort by creation."""
    global _last_ms, _seq  # noqa: PLW0603 -- process-wide monotonic counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same millisecond (or the clock stepped back): keep ids increasing
            # by counting in the 12-bit rand_a field, borrowing a ms if it fills.
            _seq += 1
            if _seq > 0xFFF:
                _last_ms += 1
                _seq = 0
            ms = _last_ms
        else:
            _last_ms, _seq = ms, 0
        counter = _seq
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand_b
    digits = f"{value:032x}"  # formatted by hand: uuid.UUID() costs more than the id itself
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
