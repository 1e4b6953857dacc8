"""The redaction hook: messages are stored as the hook makes them, the Ack says
how many it changed, and a hook that would break idempotency is refused."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from chatledger import ConfigError, InvalidMessage, Message, assistant, user
from tests.conftest import OpenLedger

CARD = re.compile(r"\b(?:\d[ -]?){12}(\d{4})\b")


def mask_cards(message: Message) -> Message:
    if not isinstance(message.content, str) or not CARD.search(message.content):
        return message
    return replace(message, content=CARD.sub(r"**** \1", message.content))


def test_messages_are_stored_redacted_and_the_ack_counts_them(open_ledger: OpenLedger) -> None:
    store = open_ledger(redact=mask_cards)
    batch = [user("my card is 4111 1111 1111 1234"), assistant("thanks")]
    ack = store.session("s").append(batch)
    assert (ack.last_seq, ack.redacted) == (2, 1)
    assert [m.text for m in store.session("s").read().messages] == [
        "my card is **** 1234", "thanks"]
    # A retry of the same batch is deduplicated as usual, and says the same.
    again = store.session("s").append(batch)
    assert (again.deduplicated, again.last_seq, again.redacted) == (True, 2, 1)
    # Nothing to redact: the Ack says 0.
    assert store.session("s").append([user("no card here")]).redacted == 0
    # A store without the hook stores exactly what it is given.
    plain = open_ledger(namespace=store.namespace)
    assert plain.session("t").append([user("4111 1111 1111 1234")]).redacted == 0
    assert plain.session("t").read().messages[0].text == "4111 1111 1111 1234"


def test_a_hook_that_changes_the_id_is_refused_and_nothing_is_stored(
    open_ledger: OpenLedger,
) -> None:
    store = open_ledger(redact=lambda m: replace(m, id=m.id + "-x"))
    with pytest.raises(InvalidMessage, match=r"messages\[0\]: the redact hook must return"):
        store.session("s").append([user("hi")])
    assert store.session("s").info() is None
    not_a_message = open_ledger(redact=lambda m: m.text)
    with pytest.raises(InvalidMessage, match="must return a Message"):
        not_a_message.session("s").append([user("hi")])


def test_a_failing_hook_fails_the_append_before_any_write(open_ledger: OpenLedger) -> None:
    def broken(message: Message) -> Message:
        raise RuntimeError("redactor down")

    store = open_ledger(redact=broken)
    with pytest.raises(RuntimeError, match="redactor down"):
        store.session("s").append([user("hi")])
    assert store.session("s").info() is None


def test_redacted_messages_are_still_checked(open_ledger: OpenLedger) -> None:
    store = open_ledger(redact=lambda m: replace(m, metadata={"bad": {1, 2}}))
    with pytest.raises(InvalidMessage, match="metadata"):
        store.session("s").append([user("hi")])
    with pytest.raises(ConfigError, match="redact must be a function"):
        open_ledger(redact="mask")
