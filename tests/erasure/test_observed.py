"""forget_user as telemetry and the pytest plugin see it: spans that name the
user and each session, and deletes the probe knows to be deliberate."""

from __future__ import annotations

import pytest

from chatledger import RetryPolicy, open_store, user
from tests.telemetry.conftest import Telemetry, telemetry  # noqa: F401 -- the fixture


def test_an_erasure_is_a_user_span_then_a_span_per_session(telemetry: Telemetry) -> None:  # noqa: F811
    with open_store("memory://", namespace=telemetry.namespace, tracing=True,
                    retry=RetryPolicy.none()) as store:
        store.session("s1", user="ivy").append([user("x")])
        store.forget_user("ivy")
    spans = [dict(span.attributes or {}) for span in telemetry.spans()]
    assert [s["db.operation.name"] for s in spans] == [
        "append", "user_sessions", "forget_session", "user_sessions"]
    assert spans[1]["chatledger.user.id"] == "ivy" and "chatledger.session.id" not in spans[1]
    assert spans[2]["chatledger.session.id"] == "s1"


def test_the_probe_takes_an_erasure_as_deliberate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from chatledger import user

        @pytest.mark.chatledger(urls=["memory://"])
        def test_forgotten(ledger_store, ledger_probe):
            ledger_store.session("s", user="ivy").append([user("hi")])
            ledger_store.forget_user("ivy")
            assert ledger_store.session("s").read().version == 0
            ledger_probe.assert_no_silent_empty_reads()
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                         "-p", "no:langsmith_plugin")
    result.assert_outcomes(passed=1)
