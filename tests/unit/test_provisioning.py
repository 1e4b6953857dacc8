"""The backends that set up storage on open say so by the protocols the CLI reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatledger._backends import build_backend
from chatledger._backends.provisioning import CreatesTable, MigratesSchema
from chatledger._options import split_options
from chatledger._url import parse_url


@pytest.mark.parametrize(("url", "migrates", "creates"), [
    ("postgresql://nobody@127.0.0.1:1/app", True, False),
    ("dynamodb://ledger?region=eu-west-1&endpoint_url=http://127.0.0.1:1", False, True),
    ("sqlite:///{tmp}/app.db", False, False),
    ("memory://", False, False),
])
def test_a_backend_that_provisions_storage_has_its_protocol(
        url: str, migrates: bool, creates: bool, tmp_path: Path) -> None:
    parsed = parse_url(url.format(tmp=tmp_path))
    backend = build_backend(parsed, *split_options(parsed.query, {}))  # no I/O yet
    try:
        assert isinstance(backend, MigratesSchema) is migrates
        assert isinstance(backend, CreatesTable) is creates
        if migrates:
            assert backend.migrated == [] and backend.schema_version == 0  # before open()
        if creates:
            assert backend.table == "ledger" and backend.created is False
    finally:
        backend.close()
