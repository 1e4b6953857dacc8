"""``chatledger.errors`` holds the error tree the package exports, the same classes."""

from __future__ import annotations

import inspect

import chatledger
import chatledger.errors


def test_the_errors_module_holds_every_error_the_package_exports() -> None:
    exported = {name for name in chatledger.__all__
                if inspect.isclass(getattr(chatledger, name))
                and issubclass(getattr(chatledger, name), BaseException)}
    assert set(chatledger.errors.__all__) == exported
    for name in exported:
        error = getattr(chatledger.errors, name)
        assert error is getattr(chatledger, name)
        assert issubclass(error, chatledger.errors.ChatLedgerError)
