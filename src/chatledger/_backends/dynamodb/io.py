"""The ``dynamodb://`` URL, the boto3 client, and DynamoDB's errors in our terms.

URLs::

    dynamodb://TABLE[?region=eu-west-1][&endpoint_url=http://127.0.0.1:8000][&create=true]

``region``
    the AWS region (default: the AWS chain's: ``AWS_REGION``, the profile).
``endpoint_url``
    another endpoint: an emulator, a VPC endpoint.
``create``
    create the table when the store opens, if it is missing (default false:
    ``chatledger create-table URL`` does it, with rights the application's
    role need not have).
``profile``
    the AWS profile of the shared config files to take credentials from.

Credentials come from the standard AWS chain (environment, profile, SSO,
instance role); they never appear in a URL, a message or a log. botocore's own
retries are off: the store retries, with the same message ids, within the
call's deadline; each request is bounded by the store's ``timeout``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from ..._checks import ForeignLayout
from ..._errors import BackendError, BackendUnavailable, ConfigError
from ..._options import StoreOptions, bool_option
from ..._url import StoreURL
from ..registry import reject_unknown_options
from .layout import INDEX, TTL_ATTRIBUTE

__all__ = [
    "OPTIONS",
    "RETRIABLE_REASONS",
    "Cancelled",
    "DynamoClient",
    "DynamoSettings",
    "cancellation_reasons",
    "client_config",
    "dynamo_settings",
    "error_code",
    "make_client",
    "shared_client",
    "table_name",
    "table_spec",
    "translated",
]

OPTIONS = ("region", "endpoint_url", "create", "profile")
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")
# Errors a retry may fix: throttling, a conflicting transaction, a server error.
_RETRIABLE = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "TransactionConflictException",
    "TransactionInProgressException", "LimitExceededException",
})
RETRIABLE_REASONS = frozenset({"TransactionConflict", "ThrottlingError",
                               "ProvisionedThroughputExceeded", "InternalServerError"})


@dataclass(frozen=True)
class DynamoSettings:
    table: str
    region: str | None
    endpoint_url: str | None
    create: bool
    profile: str | None
    timeout: float


def dynamo_settings(url: StoreURL, options: StoreOptions,
                    extra: dict[str, Any]) -> DynamoSettings:
    """Check the URL and options; the settings to connect with."""
    reject_unknown_options(url, extra, OPTIONS)
    table = table_name(url.raw)
    if not _TABLE_NAME.fullmatch(table) or url.path:
        raise ConfigError(f"{url.redacted()!r}: name a table as dynamodb://TABLE, 3 to 255 "
                          "letters, digits, '_', '-' or '.'")
    return DynamoSettings(table, _text(extra, "region"), _endpoint(extra),
                          bool_option(extra, "create", False), _text(extra, "profile"),
                          options.timeout)


def _endpoint(extra: dict[str, Any]) -> str | None:
    """``endpoint_url``, refused here unless it is an http(s) URL with a host: botocore
    would raise a bare ValueError when the client is made."""
    endpoint = _text(extra, "endpoint_url")
    if endpoint is not None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"endpoint_url={endpoint!r} is not an http:// or https:// URL "
                              "with a host (e.g. http://127.0.0.1:8000)")
    return endpoint


def table_name(url: str) -> str:
    """The table of a ``dynamodb://TABLE...`` URL, its case kept (a host name's is not)."""
    rest = url.partition("://")[2]
    return re.split(r"[/?#]", rest, maxsplit=1)[0]


def _text(extra: dict[str, Any], name: str) -> str | None:
    value = extra.get(name)
    return None if value is None else str(value)


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def shared_client(settings: DynamoSettings) -> Any:
    """The process's client for these settings: made once, as making one loads
    botocore's service model (a fraction of a second of CPU), and a client is
    thread-safe. A forked child makes its own: connections do not cross a fork."""
    key = (os.getpid(), settings.region, settings.endpoint_url, settings.profile,
           settings.timeout)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = make_client(settings)
        return client


def client_config(settings: DynamoSettings) -> dict[str, Any]:
    """A client's settings, the same for boto3 and aiobotocore: no retries of its own
    (the store retries, with the same ids), each request bounded by the timeout."""
    return {"retries": {"total_max_attempts": 1}, "connect_timeout": settings.timeout,
            "read_timeout": settings.timeout, "max_pool_connections": 32}


def make_client(settings: DynamoSettings) -> Any:
    """A boto3 DynamoDB client: no retries of its own, each request bounded."""
    session = boto3.session.Session(profile_name=settings.profile)
    return session.client("dynamodb", region_name=settings.region,
                          endpoint_url=settings.endpoint_url,
                          config=Config(**client_config(settings)))


class DynamoClient:
    """The sync backend's requests (boto3): what :class:`.aio.AsyncDynamoClient`
    is to the async one, so that one backend source serves both."""

    def __init__(self, settings: DynamoSettings, where: str) -> None:
        self.settings = settings
        self.where = where
        self._closed = False

    def call(self, operation: str, *, tolerate: str | None = None, **kwargs: Any) -> Any:
        """One request; its errors in chatledger's terms (:func:`translated`). ``tolerate``:
        an error code answered with None instead (a table that exists already)."""
        with translated(self.where):
            try:
                return getattr(self.client(), operation)(**kwargs)
            except ClientError as exc:
                if tolerate is None or error_code(exc) != tolerate:
                    raise
                return None

    def client(self) -> Any:
        if self._closed:
            raise BackendError(f"the store {self.where} is closed")
        with translated(self.where):
            return shared_client(self.settings)

    def close(self) -> None:
        """Nothing to release (the client is the process's, shared by its stores); the
        store's later requests are refused, as on the backends that hold connections."""
        self._closed = True


class Cancelled(Exception):
    """A transaction was cancelled: ``reasons`` says why, item by item (``Code``, maybe
    ``Item``). The backend reads them; it never leaves the backend."""

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__(reasons)
        self.reasons = reasons


# DynamoDB's words when a request's key is not the table's key schema.
_KEY_MISMATCH = "key element does not match the schema"


def error_code(exc: Any) -> str:
    """DynamoDB's name of the error a ClientError carries."""
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def translated(where: str) -> Iterator[None]:
    """botocore's exceptions as BackendUnavailable (retriable) or BackendError; a
    cancelled transaction as :class:`Cancelled`."""
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        reasons = cancellation_reasons(exc)
        if reasons is not None:
            raise Cancelled(reasons) from None
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in _RETRIABLE or status >= 500:
            raise BackendUnavailable(f"dynamodb {where}: {code} (retriable)") from exc
        if code == "ResourceNotFoundException":
            raise BackendError(f"dynamodb {where}: the table does not exist; create it with "
                               "`chatledger create-table URL` or open with create=true") from exc
        if code == "ValidationException" and _KEY_MISMATCH in _message(exc):
            raise ForeignLayout(f"dynamodb {where}: the table's key schema is not chatledger's "
                                "(pk HASH, sk RANGE): `chatledger doctor URL` names it; "
                                "`chatledger create-table URL` makes a table for "
                                "chatledger") from exc
        raise BackendError(f"dynamodb {where}: {exc.operation_name}: {code}: "
                           f"{_message(exc)}") from exc
    except NoCredentialsError as exc:
        raise ConfigError(f"dynamodb {where}: no AWS credentials found (environment, "
                          "profile, SSO or instance role)") from exc
    except NoRegionError as exc:
        raise ConfigError(f"dynamodb {where}: no AWS region: give ?region=... in the URL, "
                          "or set AWS_DEFAULT_REGION or a profile's region") from exc
    except BotoCoreError as exc:  # connection refused, reset, timed out, cut off
        raise BackendUnavailable(f"dynamodb {where}: {type(exc).__name__}") from exc


def _message(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Message", ""))[:200]


def cancellation_reasons(exc: Any) -> list[dict[str, Any]] | None:
    """The per-item reasons of a cancelled transaction (``Code``, maybe ``Item``); None
    for any other error."""
    error = exc.response.get("Error", {})
    if error.get("Code") != "TransactionCanceledException":
        return None
    reasons = exc.response.get("CancellationReasons")
    if reasons is None:  # some emulators say it in the message only: "[None, ...]"
        listed = re.search(r"\[(.*)\]", str(error.get("Message", "")))
        codes = [part.strip() for part in listed.group(1).split(",")] if listed else []
        return [{"Code": code} for code in codes]
    return list(reasons)


def table_spec(table: str) -> dict[str, Any]:
    """CreateTable's request for chatledger's layout: on-demand billing, the
    ``sessions`` and ``users`` indexes (TTL is enabled after, by its own request)."""
    return {
        "TableName": table, "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"}
                                 for name in ("pk", "sk", "ns", "sid")],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                      {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": INDEX,
            "KeySchema": [{"AttributeName": "ns", "KeyType": "HASH"},
                          {"AttributeName": "sid", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": [TTL_ATTRIBUTE]},
        }],
    }
