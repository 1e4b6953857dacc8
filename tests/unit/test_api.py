"""The public surface: exported names, the error tree, URLs and options."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

import chatledger
from chatledger import (
    BackendError,
    BackendUnavailable,
    ChatLedgerError,
    ConfigError,
    ConflictError,
    CorruptEntryError,
    InvalidMessage,
    MemoryLostError,
    RetryPolicy,
    open_store,
)
from chatledger._url import parse_url


def test_the_exported_names_are_pinned() -> None:
    assert sorted(chatledger.__all__) == [
        "Ack", "AsyncSession", "AsyncStore", "BackendError", "BackendUnavailable",
        "ChatLedgerError", "ConfigError", "ConflictError", "CorruptEntryError",
        "EncryptionKeyError", "ForgetReport", "History", "InvalidMessage", "Keyring",
        "MemoryLostError", "Message", "RetryPolicy", "RotationReport", "Session",
        "SessionInfo", "SessionUserError", "Store", "StoreOptions",
        "ToolCall", "approximate_tokens", "assistant", "open_async_store", "open_store",
        "summary_through", "system", "tool", "user",
    ]
    for name in chatledger.__all__:
        assert getattr(chatledger, name) is not None


def test_the_error_tree_matches_the_design() -> None:
    for error in (ConfigError, InvalidMessage, ConflictError, MemoryLostError,
                  CorruptEntryError, BackendError, chatledger.SessionUserError):
        assert error.__bases__ == (ChatLedgerError,)
    assert BackendUnavailable.__bases__ == (BackendError,)
    # A sealed entry that cannot be opened is an entry that cannot be decoded.
    assert chatledger.EncryptionKeyError.__bases__ == (CorruptEntryError,)
    assert chatledger._errors.__all__ == sorted(chatledger._errors.__all__)


def test_parse_url_reads_every_part() -> None:
    url = parse_url("redis+sentinel://bob:p%40ss@h1:26379,h2,[::1]:26380/mymaster?ttl=5&x=y")
    assert url.scheme == "redis+sentinel"
    assert url.hosts == [("h1", 26379), ("h2", None), ("::1", 26380)]
    assert (url.username, url.password, url.path) == ("bob", "p@ss", "mymaster")
    assert url.query == {"ttl": "5", "x": "y"}
    assert "p%40ss" not in parse_url("redis://u:secret@h/0").redacted()
    assert parse_url("redis://u:secret@h/0").redacted() == "redis://u:***@h/0"
    assert parse_url("redis://u:p%40ss@h/0").redacted() == "redis://u:***@h/0"
    assert parse_url("redis://user:p@ss@h:1/0").redacted() == "redis://user:***@h:1/0"
    assert parse_url("redis+sentinel://h/m?sentinel_password=s3&db=1").redacted() == \
        "redis+sentinel://h/m?sentinel_password=***&db=1"
    assert parse_url("sqlite:///a.db").path == "a.db"
    assert parse_url("sqlite:////abs/a.db").path == "/abs/a.db"
    assert parse_url("memory://").hosts == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("chatledger.db", "has no scheme; did you mean 'sqlite:///chatledger.db'?"),
        ("/var/a.db", "has no scheme; did you mean 'sqlite:////var/a.db'?"),
        ("localhost:6379", "has no scheme; try 'sqlite:///chatledger.db'"),
        ("c:\\a", "has no scheme; try"),
        ("redis:/localhost", "needs '//' after 'redis:'; did you mean 'redis://localhost'?"),
        ("sqlite:a.db", "needs '//' after 'sqlite:'; did you mean 'sqlite:///a.db'?"),
        ("nosuch://x", "unknown store URL scheme 'nosuch'"),
        ("postgress://x/y", "'postgress' in 'postgress://x/y'; did you mean 'postgres'? known"),
        ("redis+sentinal://h/m", "did you mean 'redis+sentinel'?"),
        ("redis://h:notaport/0", "bad port"),
        ("sqlite://", "names no database file"),
        ("sqlite:///:memory:", "use memory://"),
        ("sqlite://host/x.db", "has no host"),
        ("sqlite:///x.db?synchronous=sometimes", "synchronous='sometimes'"),
        ("memory://?speed=fast", "unknown option 'speed' for memory://"),
        ("memory://?ttl=soon", "ttl must be a number of seconds, got 'soon'"),
        ("memory://?ttl=-1", "ttl must be positive"),
        ("memory://?touch_on_read=maybe", "is not a boolean"),
        ("memory://?timeout=0", "timeout must be positive"),
        ("memory://?max_message_bytes=0", "max_message_bytes must be a positive int"),
        ("memory://?ttl=nan", "ttl must be positive and at most"),
        ("memory://?ttl=inf", "ttl must be positive and at most"),
        ("memory://?ttl=1e12", "ttl must be positive and at most"),
        ("memory://?timeout=nan", "timeout must be positive"),
        ("memory://?retry=none", "option 'retry' cannot be given in a URL"),
        ("memory://?clock=1", "option 'clock' cannot be given in a URL"),
    ],
)
def test_bad_urls_and_options_are_config_errors(url: str, message: str, tmp_path: object) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        open_store(url)


def test_options_come_from_the_url_or_keywords_but_not_both() -> None:
    store = open_store("memory://?ttl=60&touch_on_read=yes&namespace=n1&max_message_bytes=99")
    assert (store.options.ttl, store.options.touch_on_read) == (60.0, True)
    assert (store.namespace, store.options.max_message_bytes) == ("n1", 99)
    assert open_store("memory://", ttl=timedelta(days=1)).options.ttl == 86400.0
    assert open_store("memory://?touch_on_read=off").options.touch_on_read is False
    with pytest.raises(ConfigError, match="both in the URL and as an argument"):
        open_store("memory://?ttl=5", ttl=5)
    with pytest.raises(ConfigError, match="namespace"):
        open_store("memory://", namespace="")
    with pytest.raises(ConfigError, match="namespace must be a str"):
        open_store("memory://", namespace=5)


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger import _backends as backends
    from chatledger._backends.registry import Builtin

    monkeypatch.setitem(backends.BUILTIN, "fancy", Builtin(("chatledger_fancy_driver",), "fancy"))
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[fancy\]" in a chatledger checkout'):
        open_store("fancy://x")


def test_retry_policies_are_checked() -> None:
    assert RetryPolicy.none().attempts == 1
    assert list(RetryPolicy.none().delays()) == []
    delays = list(RetryPolicy(attempts=4, backoff=0.1, max_backoff=0.15).delays())
    assert len(delays) == 3 and all(0 <= d <= 0.15 for d in delays)
    with pytest.raises(ConfigError, match="at least 1"):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigError, match="positive"):
        RetryPolicy(deadline=0)


def test_stores_and_sessions_describe_themselves() -> None:
    with open_store("memory://", namespace="ns") as store:
        assert repr(store) == "<Store memory:// namespace='ns'>"
        assert repr(store.session("s")) == "<Session 's' of <Store memory:// namespace='ns'>>"


def test_prefix_upper_bound_skips_surrogates_and_the_top_code_point() -> None:
    from chatledger._backends.contract import prefix_upper_bound

    assert prefix_upper_bound("ab") == "ac"
    assert prefix_upper_bound("a\ud7ff") == "a\ue000"
    assert prefix_upper_bound("a\U0010ffff") == "b"
    assert prefix_upper_bound("\U0010ffff") is None
    assert prefix_upper_bound("") is None


def test_an_explicit_none_ttl_means_no_expiry() -> None:
    assert open_store("memory://", ttl=None).options.ttl is None


def test_no_error_shows_a_password() -> None:
    from chatledger._doctor import diagnose

    for url in ("redis://u:p%40ss@127.0.0.1:1/0?bogus=1", "redis://u:s3cret@h:port/0",
                "redis+sentinel://127.0.0.1:1/m?sentinel_password=s3cret&bogus=1"):
        with pytest.raises(ConfigError) as caught:
            open_store(url)
        assert "p%40ss" not in str(caught.value) and "s3cret" not in str(caught.value)
        report = diagnose(url)
        assert "p%40ss" not in str(report.to_json()) and "s3cret" not in str(report.to_json())
    with pytest.raises(chatledger.BackendUnavailable) as unavailable:
        open_store("redis://u:p%40ss@127.0.0.1:1/0", retry=RetryPolicy.none()).session("s").read()
    assert "p%40ss" not in str(unavailable.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"retry": "none"}, "retry must be a RetryPolicy"),
     ({"clock": 1}, "clock must be a function"),
     ({"ttl": "soon"}, "ttl must be a number of seconds, got 'soon'"),
     ({"timeout": True}, "timeout must be a number of seconds"),
     ({"touch_on_read": 1}, "touch_on_read must be a bool"),
     ({"max_message_bytes": 1.5}, "max_message_bytes must be a positive int")],
)
def test_keyword_options_are_type_checked(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store("memory://", **options)


def test_a_retry_waits_only_if_an_attempt_as_long_as_the_last_fits() -> None:
    import time

    from chatledger._deadline import Pauses as _Pauses
    from chatledger._options import StoreOptions

    options = StoreOptions(timeout=2.0, retry=RetryPolicy(attempts=5, backoff=0.0))
    now = time.monotonic()
    assert _Pauses(options, started=now).next(last_attempt=1.0) == 0.0  # 2 s fits in 10
    assert _Pauses(options, started=now - 5).next(last_attempt=1.0) == 0.0  # 2 s fits in 5
    assert _Pauses(options, started=now - 5).next(last_attempt=6.0) is None  # 6 s does not
    assert _Pauses(options, started=now - 9).next(last_attempt=0.1) == 0.0  # 0.1 s fits in 1
    assert _Pauses(options, started=now - 9.5).next(last_attempt=0.6) is None  # 0.6 in 0.5


@pytest.mark.parametrize("url", ["redis://:Sup3r?Secr3t@10.0.0.1:6379/0",
                                 "redis://app:pa55/w0rdX@10.0.0.1:6379/0",
                                 "redis://app:zq9@xy7#kk5@10.0.0.1:6379/0",
                                 # read as host "Lima2" and an option (or a db) "Mike3@...":
                                 "redis://:Kilo1@Lima2?Mike3@10.0.0.1:6379/0",
                                 "redis://:Kilo1@Lima2/Mike3@10.0.0.1:6379/0"])
def test_a_password_that_was_not_percent_encoded_never_shows(url: str) -> None:
    from chatledger._url import redact

    secret = url.split("//", 1)[1].split(":", 1)[1].rsplit("@", 1)[0]
    pieces = [piece for piece in re.split(r"[/?#@]", secret) if piece]
    assert not any(piece in redact(url) for piece in pieces)
    assert "10.0.0.1:6379" in redact(url)
    try:
        open_store(url).close()  # "@" and "#" parse; "/" and "?" do not
    except ConfigError as exc:
        assert not any(piece in str(exc) for piece in pieces)
        assert "percent-encoded" in str(exc)


def test_the_retry_deadline_can_be_given_in_a_url() -> None:
    with open_store("memory://?retry_deadline=2.5") as store:
        assert store.options.retry == RetryPolicy(deadline=2.5)
    for url, options, message in [
        ("memory://?retry_deadline=soon", {}, "not a number of seconds"),
        ("memory://?retry_deadline=0", {}, "must be positive"),
        ("memory://?retry_deadline=1", {"retry": RetryPolicy.none()}, "not both"),
    ]:
        with pytest.raises(ConfigError, match=message):
            open_store(url, **options)


@pytest.mark.parametrize(("options", "message"), [
    ({"deadline": float("nan")}, "retry delays must be positive"),
    ({"backoff": float("nan")}, "retry delays must be positive"),
    ({"deadline": float("inf")}, "the retry deadline must be a finite number of seconds"),
])
def test_a_retry_policy_that_could_never_end_is_refused(options: dict[str, float],
                                                         message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryPolicy(**options)
