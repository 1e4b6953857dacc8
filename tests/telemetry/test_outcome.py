"""What telemetry says about a call, whatever the exporter: names, outcomes, numbers."""

from __future__ import annotations

import pytest

from chatledger import BackendError, BackendUnavailable, CorruptEntryError, EncryptionKeyError
from chatledger._events import Operation
from chatledger._telemetry.outcome import Where, appended_bytes, details, outcome, system_of
from chatledger._url import parse_url


@pytest.mark.parametrize(("scheme", "system"), [
    ("redis", "redis"), ("rediss", "redis"), ("unix", "redis"), ("redis+sentinel", "redis"),
    ("rediss+cluster", "redis"), ("sqlite", "sqlite"), ("memory", "chatledger.memory"),
    ("postgresql", "postgresql"), ("postgres", "postgresql"), ("dynamodb", "aws.dynamodb"),
])
def test_the_system_is_named_as_opentelemetry_does(scheme: str, system: str) -> None:
    assert system_of(scheme) == system


def test_a_unix_socket_is_the_server_address() -> None:
    where = Where.of(parse_url("unix:///run/redis.sock?db=2"), "bot")
    assert where.attributes() == {"db.system.name": "redis", "db.system": "redis",
                                  "db.namespace": "bot", "server.address": "/run/redis.sock"}


def test_a_file_store_names_no_server() -> None:
    assert set(Where.of(parse_url("sqlite:///secret/dir/a.db"), "bot").attributes()) == {
        "db.system.name", "db.system", "db.namespace"}


def _failed(error: BaseException) -> Operation:
    return Operation("read", "memory://", "bot", "s", 0.0, 0.1, 1, error=error, sent=10)


def test_an_unexpected_error_is_an_error_without_numbers() -> None:
    failed = _failed(BackendError("the server said no"))
    assert (outcome(failed), details(failed), appended_bytes(failed)) == ("error", {}, 0)
    assert outcome(_failed(CorruptEntryError("s", 3, "not JSON"))) == "corrupt"


def test_an_error_is_named_by_the_class_it_is_a_kind_of() -> None:
    """A subclass keeps its parent's outcome: a key the keyring lacks is a corrupt entry."""
    assert outcome(_failed(EncryptionKeyError("s", 3, "no key", "k1"))) == "corrupt"
    assert outcome(_failed(BackendUnavailable("down"))) == "unavailable"
