"""Model-based test: random sequences of operations against a plain Python model.

Hypothesis drives appends (new batches, exact retries, partial retries, right
and wrong ``expect_version``), reads of every window shape, trims, deletes and
expiry across a few sessions, and after every step the backend must answer
exactly what the model says. It finds what example tests miss: an operation
that is right alone but wrong after another one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from chatledger import (
    Ack,
    ConflictError,
    InvalidMessage,
    MemoryLostError,
    Message,
    Store,
    assistant,
    user,
)
from tests.backends import BackendCase
from tests.conftest import FakeClock, OpenLedger

SESSIONS = ("a", "b", "c*")
TTL = 100.0


@dataclass
class Ledger:
    """What the store should hold for one session."""

    messages: list[Message] = field(default_factory=list)  # seq i+first_seq at index i
    first_seq: int = 1
    version: int = 0
    batches: list[tuple[list[Message], Ack]] = field(default_factory=list)
    expires: float | None = None
    ledger: str | None = None  # the ledger id the store gave it

    def window(self, low: int, count: int | None) -> list[Message]:
        start = max(low, self.first_seq) - self.first_seq
        return self.messages[start:] if count is None else self.messages[start:start + count]


class LedgerMachine(RuleBasedStateMachine):
    """Set ``open`` (a store factory) and ``clock`` on a subclass before running."""

    open: Callable[..., Store]
    clock: FakeClock
    expiring: bool  # does the backend take the fake clock? then sessions get a ttl
    counter = 0

    @initialize()
    def start(self) -> None:
        LedgerMachine.counter += 1
        # Every example starts from an empty namespace of its own.
        self.store = type(self).open(namespace=f"model-{LedgerMachine.counter}",
                                     ttl=TTL if self.expiring else None)
        self.model: dict[str, Ledger] = {}
        self.known: dict[str, int] = {}  # the highest version each session showed
        self.gone: dict[str, str] = {}  # a session's last ledger id, once deleted or expired

    def _live(self, session: str) -> Ledger | None:
        ledger = self.model.get(session)
        if ledger is not None and ledger.expires is not None and ledger.expires <= self.clock():
            self._forget(session)
            return None
        return ledger

    def _forget(self, session: str) -> None:
        ledger = self.model.pop(session, None)
        if ledger is not None and ledger.ledger is not None:
            self.gone[session] = ledger.ledger

    def _batch(self, size: int) -> list[Message]:
        LedgerMachine.counter += 1
        return [(user if i % 2 == 0 else assistant)(f"m{LedgerMachine.counter}.{i}")
                for i in range(size)]

    @rule(session=st.sampled_from(SESSIONS), size=st.integers(1, 3),
          expect=st.sampled_from(["none", "right", "wrong"]))
    def append(self, session: str, size: int, expect: str) -> None:
        ledger = self._live(session) or Ledger()
        expected = {"none": None, "right": ledger.version, "wrong": ledger.version + 1}[expect]
        batch = self._batch(size)
        if expect == "wrong":
            with pytest.raises(ConflictError) as caught:
                self.store.session(session).append(batch, expect_version=expected)
            assert caught.value.current == ledger.version
            return
        ack = self.store.session(session).append(batch, expect_version=expected)
        first = ledger.version + 1
        assert ack == Ack(first, first + size - 1, first + size - 1, ledger=ack.ledger)
        if ledger.ledger is None:  # a new ledger: never an id seen before
            assert ack.ledger not in self.gone.values()
        assert ack.ledger == (ledger.ledger or ack.ledger)
        ledger.ledger = ack.ledger
        ledger.messages += batch
        ledger.version = ack.version
        ledger.batches.append((batch, ack))
        ledger.expires = self.clock() + TTL if self.expiring else None
        self.model[session] = ledger

    @precondition(lambda self: any(ledger.batches for ledger in self.model.values()))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        session = data.draw(st.sampled_from(sorted(s for s, led in self.model.items()
                                                   if led.batches)))
        ledger = self._live(session)
        if ledger is None:
            return
        batch, ack = data.draw(st.sampled_from(ledger.batches))
        whole = data.draw(st.booleans()) or len(batch) == 1
        if whole:
            again = self.store.session(session).append(batch, expect_version=0)
            assert again == Ack(ack.first_seq, ack.last_seq, ack.version, deduplicated=True,
                                ledger=ledger.ledger)
        else:
            with pytest.raises(InvalidMessage):
                self.store.session(session).append(batch[1:])

    @rule(session=st.sampled_from(SESSIONS), last=st.none() | st.integers(0, 8),
          after=st.none() | st.integers(0, 20), limit=st.none() | st.integers(0, 5))
    def read(self, session: str, last: int | None, after: int | None,
             limit: int | None) -> None:
        if last is not None:
            after = limit = None
        ledger = self._live(session) or Ledger()
        history = self.store.session(session).read(last=last, after=after, limit=limit)
        if last is not None:
            expected = ledger.window(ledger.version - last + 1, last)
        else:
            expected = ledger.window((after or 0) + 1, limit)
        assert history.messages == expected
        assert [m.seq for m in history] == [
            ledger.first_seq + ledger.messages.index(m) for m in expected]
        assert (history.version, history.first_seq, history.ledger) == (
            ledger.version, ledger.first_seq if ledger.version else 1, ledger.ledger)
        if session in self.gone:  # whoever knew the old ledger is told it is gone
            with pytest.raises(MemoryLostError) as lost:
                self.store.session(session).read(last=0, ledger=self.gone[session])
            assert lost.value.found_ledger == ledger.ledger
        self.known[session] = max(self.known.get(session, 0), history.version)

    @rule(session=st.sampled_from(SESSIONS), keep=st.integers(0, 6))
    def trim(self, session: str, keep: int) -> None:
        ledger = self._live(session)
        dropped = self.store.session(session).trim(keep_last=keep)
        if ledger is None:
            assert dropped == 0
            return
        cut = max(ledger.first_seq, ledger.version - keep + 1)
        assert dropped == cut - ledger.first_seq
        ledger.messages = ledger.messages[cut - ledger.first_seq:]
        ledger.first_seq = cut

    @rule(session=st.sampled_from(SESSIONS))
    def delete(self, session: str) -> None:
        existed = self._live(session) is not None
        assert self.store.session(session).delete() is existed
        self._forget(session)
        if self.known.get(session):
            with pytest.raises(MemoryLostError):
                self.store.session(session).read(min_version=self.known[session])
        self.known.pop(session, None)

    @precondition(lambda self: self.expiring)
    @rule(seconds=st.sampled_from([1.0, 60.0, 150.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def listings_match(self) -> None:
        live = sorted(s for s in list(self.model) if self._live(s) is not None)
        assert sorted(self.store.sessions()) == live
        for session in SESSIONS:
            info = self.store.session(session).info()
            ledger = self.model.get(session)
            if ledger is None:
                assert info is None
            else:
                assert info is not None
                assert (info.version, info.first_seq, info.count, info.ledger) == (
                    ledger.version, ledger.first_seq, len(ledger.messages), ledger.ledger)


def test_the_store_behaves_like_the_model(backend: BackendCase, open_ledger: OpenLedger,
                                          clock: FakeClock) -> None:
    class Machine(LedgerMachine):
        pass

    Machine.open = staticmethod(open_ledger)
    Machine.clock = clock
    Machine.expiring = backend.injectable_clock  # the server's own expiry is tested elsewhere
    Machine.TestCase.settings = settings(
        max_examples=backend.model_examples, stateful_step_count=40, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    Machine.TestCase().runTest()
