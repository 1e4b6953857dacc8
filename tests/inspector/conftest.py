"""A filled SQLite store for the inspector, and the app on it (in-process client)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from chatledger._inspector.app import inspector_app

from ._data import NAMESPACE, fill


@pytest.fixture(scope="session")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('inspector') / 'inspected.db'}"
    fill(url)
    return url


@pytest.fixture(scope="module")
def client(store_url: str) -> Iterator[TestClient]:
    with TestClient(inspector_app(store_url, namespace=NAMESPACE)) as opened:
        yield opened
