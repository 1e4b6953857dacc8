"""A backend case without a user index (none of the built-in ones today): user= and forget_user
are refused with a clear error, before anything is written; the rest works."""

from __future__ import annotations

import pytest

from chatledger import ConfigError, Store, user
from tests.backends import BackendCase


def test_user_and_forget_user_need_the_backend_s_user_index(backend: BackendCase,
                                                            store: Store) -> None:
    if backend.user_index:
        assert store._backend.supports_users
        return
    with pytest.raises(ConfigError, match="keeps no user index: user= and forget_user"):
        store.session("s", user="alice").append([user("not stored")])
    with pytest.raises(ConfigError, match="keeps no user index"):
        store.forget_user("alice")
    assert store.session("s").info() is None  # nothing was written
    store.session("s").append([user("untagged")])
    info = store.session("s").info()
    assert info is not None and info.user is None
