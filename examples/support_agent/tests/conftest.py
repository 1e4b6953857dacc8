"""The support agent's tests use the chatledger pytest plugin only: its fixtures
(ledger_store, ledger_url, seed_session, ledger_faults, ledger_probe) come from
the installed plugin, not from this file."""
