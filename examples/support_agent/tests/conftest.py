"""The support agent's tests use the chatledger pytest plugin only: its fixtures
(ledger_store, ledger_url, seed_session, ledger_faults, ledger_probe) come from
the installed plugin, not from this file. This file only makes the example's
package importable however pytest is started (from here or from a copy)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
