"""``ledger_url`` carries the test's options in a form the URL's query reads back: a
timedelta as seconds, a bool as true/false (what ``ledger_store`` was opened with)."""

from __future__ import annotations

from datetime import timedelta

from chatledger import open_store
from chatledger.testing._plugin.targets import Target


def test_the_url_opens_a_store_with_the_tests_options() -> None:
    options = {"ttl": timedelta(hours=1), "timeout": timedelta(seconds=1.5),
               "touch_on_read": True, "allow_plaintext": False}
    target = Target("memory://", "ns1", options)
    with open_store(target.url_with_namespace) as store:
        assert store.namespace == "ns1"
        assert (store.options.ttl, store.options.timeout) == (3600.0, 1.5)
        assert store.options.touch_on_read is True
        assert store.options.allow_plaintext is False
    with open_store(Target("memory://", "ns2", {"touch_on_read": False}).url_with_namespace
                    ) as store:
        assert store.options.touch_on_read is False
