"""Child processes of the CLI's tests import the same chatledger as the tests do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import chatledger

SRC = str(Path(chatledger.__file__).parents[1])


@pytest.fixture(autouse=True)
def children_import_this_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the copy under test first on the children's path, by an absolute path.

    The demo runs ``python -m chatledger`` from the test's working directory,
    often a tmp_path: a relative PYTHONPATH (``PYTHONPATH=src``) would find
    nothing there, and the children would import whatever copy is installed.
    """
    inherited = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([SRC, *([inherited] if inherited else [])]))
