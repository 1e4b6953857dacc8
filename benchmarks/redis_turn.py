"""What does one agent turn cost on Redis: chatledger against the usual alternatives?

A "turn" is what an agent does on every request: read the last 20 messages to
build the prompt, then store one user/assistant pair. An "append" is the second
half alone. This script times both with ``time.perf_counter_ns``, in one process,
against one private ``redis-server`` it starts itself on a free loopback port
(``chatledger.testing.RedisServer``: no RDB snapshots, no AOF), for four
contenders at history lengths of 10, 1,000 and 10,000 messages:

- chatledger, sync: ``session.read(last=20)`` then ``session.append([user, assistant])``;
- chatledger, async: the same awaited, every call timed inside one event loop;
- langchain-community's ``RedisChatMessageHistory``: ``.messages`` (it loads and
  parses the whole list: that is the point of the comparison) then
  ``add_messages([HumanMessage, AIMessage])`` (one LPUSH per message);
- raw redis-py on a list of JSON strings: ``LRANGE key -20 -1`` and ``json.loads``
  of the 20, then ``json.dumps`` of the pair and one ``RPUSH key a b``;
- chatledger's LangChain adapter, ``ChatLedgerHistory(store, id, last=20)`` on
  the sync store: ``.messages`` (the whole history at 10, the newest 20 beyond)
  then ``add_messages``, the swap its users make for ``RedisChatMessageHistory``.

It prints the median and p90 of each, and ratios against their targets:
chatledger's turn at 10,000 over its turn at 10 (≤ 1.3, sync and async), the
RedisChatMessageHistory turn over chatledger's at 10,000 (≥ 10), chatledger's
append over the raw RPUSH append (≤ 1.5) and its turn over the raw turn (≤ 1.3),
and ``ChatLedgerHistory``'s turn over ``RedisChatMessageHistory``'s at 10
messages (≤ 1.0), from a run of their own where the two alternate turn by turn
(the "(paired)" rows). Last, the stored bytes per 200-character message: sessions
of 1,000 and 10,000 such messages, ``MEMORY USAGE ... SAMPLES 0`` of their three keys
over the count, against the message as compact JSON (its stored entry less the
format byte; ≤ 1.15). With ``--check`` it exits 1 when a ratio misses its target.

Histories are built fast, before any clock runs: chatledger in batches of 1,000,
the two plain lists with RPUSH/LPUSH of 1,000 entries, RedisChatMessageHistory's
encoded with its own serializer (``json.dumps(message_to_dict(m))``, as its
``add_message`` does) and checked by reading ``.messages`` back in full. No TTL is
set anywhere. The timed operations are interleaved across the lengths (one turn
and one append at each length per round), messages are built before the clock
starts, and after every timed operation its two messages are removed again off
the clock (``trim(keep_last=N)``, LPOP, RPOP), so each history holds exactly N
messages whenever it is timed. RedisChatMessageHistory gets fewer rounds, as each
of its turns at 10,000 takes a large fraction of a second; ``ChatLedgerHistory``
gets as few, so that the two LangChain histories are timed side by side. It is
a measurement report, not a test: without ``--check`` it exits 0 whether or not
the targets are met.

Run it from the repository root, after ``pip install -e ".[bench]"``::

    python benchmarks/redis_turn.py            # 200 timed rounds (RedisChatMessageHistory: 60)
    python benchmarks/redis_turn.py --quick    # 50 timed rounds (RedisChatMessageHistory: 15)
    python benchmarks/redis_turn.py --check    # exit 1 if a ratio misses its target
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol, cast

import redis
from _report import environment, median_us, p90_us, print_header
from _report import parse_args as report_args
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, message_to_dict

from chatledger import (
    AsyncSession,
    Message,
    Session,
    Store,
    assistant,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.redis.keys import SessionKeys
from chatledger._codec import encode
from chatledger.langchain import ChatLedgerHistory
from chatledger.testing import RedisServer

with warnings.catch_warnings():
    # Its import announces that the package is being sunset; the class still ships in it.
    warnings.filterwarnings("ignore", "`langchain-community` is being sunset", DeprecationWarning)
    from langchain_community.chat_message_histories import RedisChatMessageHistory

LENGTHS = (10, 1_000, 10_000)
WINDOW = 20
BATCH = 1_000
TURN_FLATNESS_TARGET = 1.3
LANGCHAIN_TARGET = 10.0
APPEND_TARGET = 1.5
RAW_TURN_TARGET = 1.3
ADAPTER_TARGET = 1.0
BYTES_TARGET = 1.15
BYTES_LENGTHS = (1_000, 10_000)
BYTES_TEXT = ("Could you tell me whether the order I placed last Tuesday has shipped yet? "
              * 3)[:200]
USER_TEXT = "Where is my order? It was due on Tuesday and the tracking page says nothing. " * 2
ASSISTANT_TEXT = "Let me check: your order shipped yesterday and should arrive tomorrow. " * 8

CHATLEDGER_SYNC = "chatledger sync"
CHATLEDGER_ASYNC = "chatledger async"
LANGCHAIN = "RedisChatMessageHistory"
RAW = "raw redis-py RPUSH/LRANGE"
ADAPTER = "ChatLedgerHistory"
PAIRED = "(paired)"

Text = tuple[str, str]
"""A message before it is given a contender's type: (role, content)."""


@dataclass(frozen=True)
class Rounds:
    """How many rounds to time, and how many to run first to warm up."""

    timed: int
    warmup: int

    @property
    def total(self) -> int:
        return self.warmup + self.timed


@dataclass(frozen=True)
class Config:
    """The rounds for every contender; the whole-history loader gets fewer."""

    rounds: Rounds
    langchain_rounds: Rounds


@dataclass
class Cell:
    """The timings of one contender at one history length, in nanoseconds."""

    backend: str
    length: int
    turns: list[int] = field(default_factory=list)
    appends: list[int] = field(default_factory=list)


def exchange(n: int) -> list[Text]:
    """The ``n``-th user message and the assistant's answer."""
    return [("user", f"#{n} {USER_TEXT}"), ("assistant", f"#{n} {ASSISTANT_TEXT}")]


def conversation(length: int) -> list[Text]:
    """``length`` messages (an even number) of alternating user and assistant turns."""
    return [text for n in range(length // 2) for text in exchange(n)]


def batches(items: Sequence[Any]) -> list[Sequence[Any]]:
    """``items`` in slices of ``BATCH``."""
    return [items[start : start + BATCH] for start in range(0, len(items), BATCH)]


def session_id(length: int) -> str:
    """The session id (or key suffix) of the history of ``length`` messages."""
    return f"len-{length}"


def elapsed_since(start: int) -> int:
    return time.perf_counter_ns() - start


def expect(what: str, got: object, wanted: object) -> None:
    """Stop the run if a contender did not do what is being timed."""
    if got != wanted:
        raise RuntimeError(f"{what}: expected {wanted!r}, got {got!r}")


class Contender(Protocol):
    """One way of keeping a conversation in Redis, with one history per length."""

    label: str

    def fill(self, length: int) -> None: ...
    def size(self, length: int) -> int: ...
    def turn(self, length: int, n: int) -> int: ...
    def append(self, length: int, n: int) -> int: ...
    def restore(self, length: int) -> None: ...


# -- chatledger ---------------------------------------------------------------------------

CHATLEDGER_ROLES: dict[str, Callable[[str], Message]] = {"user": user, "assistant": assistant}


def ledger_messages(texts: list[Text]) -> list[Message]:
    return [CHATLEDGER_ROLES[role](content) for role, content in texts]


class ChatledgerSync:
    """``open_store(url)``: one session per length."""

    label = CHATLEDGER_SYNC

    def __init__(self, sessions: dict[int, Session]) -> None:
        self.sessions = sessions

    def fill(self, length: int) -> None:
        for batch in batches(ledger_messages(conversation(length))):
            self.sessions[length].append(batch)

    def size(self, length: int) -> int:
        info = self.sessions[length].info()
        return 0 if info is None else info.count

    def turn(self, length: int, n: int) -> int:
        session, pair = self.sessions[length], ledger_messages(exchange(n))
        start = time.perf_counter_ns()
        history = session.read(last=WINDOW)
        session.append(pair)
        elapsed = elapsed_since(start)
        expect("chatledger read(last=20)", len(history.messages), min(WINDOW, length))
        return elapsed

    def append(self, length: int, n: int) -> int:
        session, pair = self.sessions[length], ledger_messages(exchange(n))
        start = time.perf_counter_ns()
        session.append(pair)
        return elapsed_since(start)

    def restore(self, length: int) -> None:
        self.sessions[length].trim(keep_last=length)


class ChatledgerAsync:
    """``await open_async_store(url)``: the same as `ChatledgerSync`, awaited."""

    label = CHATLEDGER_ASYNC

    def __init__(self, sessions: dict[int, AsyncSession]) -> None:
        self.sessions = sessions

    async def fill(self, length: int) -> None:
        for batch in batches(ledger_messages(conversation(length))):
            await self.sessions[length].append(batch)

    async def size(self, length: int) -> int:
        info = await self.sessions[length].info()
        return 0 if info is None else info.count

    async def turn(self, length: int, n: int) -> int:
        session, pair = self.sessions[length], ledger_messages(exchange(n))
        start = time.perf_counter_ns()
        history = await session.read(last=WINDOW)
        await session.append(pair)
        elapsed = elapsed_since(start)
        expect("chatledger async read(last=20)", len(history.messages), min(WINDOW, length))
        return elapsed

    async def append(self, length: int, n: int) -> int:
        session, pair = self.sessions[length], ledger_messages(exchange(n))
        start = time.perf_counter_ns()
        await session.append(pair)
        return elapsed_since(start)

    async def restore(self, length: int) -> None:
        await self.sessions[length].trim(keep_last=length)


# -- langchain-community ------------------------------------------------------------------

LANGCHAIN_ROLES: dict[str, Callable[[str], BaseMessage]] = {
    "user": lambda content: HumanMessage(content=content),
    "assistant": lambda content: AIMessage(content=content),
}


def langchain_messages(texts: list[Text]) -> list[BaseMessage]:
    return [LANGCHAIN_ROLES[role](content) for role, content in texts]


def described(messages: list[BaseMessage]) -> tuple[int, str, str]:
    """How many messages, and the type and start of the first and of the last."""
    first, last = messages[0], messages[-1]
    return len(messages), f"{first.type}: {first.content!s:.8}", f"{last.type}: {last.content!s:.8}"


class LangchainHistory:
    """``RedisChatMessageHistory(session_id=..., url=..., ttl=None)`` per length.

    It keeps a session in one list, newest first (LPUSH), and reverses it on read.
    """

    label = LANGCHAIN

    def __init__(self, url: str) -> None:
        # Any: the adapter below keeps ChatLedgerHistory objects here, timed the same way.
        self.histories: dict[int, Any] = {
            length: RedisChatMessageHistory(session_id=session_id(length), url=url, ttl=None)
            for length in LENGTHS
        }

    def fill(self, length: int) -> None:
        history = self.histories[length]
        wanted = langchain_messages(conversation(length))
        for batch in batches(wanted):
            encoded = [json.dumps(message_to_dict(message)) for message in batch]
            history.redis_client.lpush(history.key, *encoded)
        loaded = history.messages
        expect("RedisChatMessageHistory.messages", described(loaded), described(wanted))

    def size(self, length: int) -> int:
        return len(self.histories[length].messages)

    def turn(self, length: int, n: int) -> int:
        history, pair = self.histories[length], langchain_messages(exchange(n))
        start = time.perf_counter_ns()
        messages = history.messages
        history.add_messages(pair)
        elapsed = elapsed_since(start)
        expect("RedisChatMessageHistory.messages", len(messages), length)
        return elapsed

    def append(self, length: int, n: int) -> int:
        history, pair = self.histories[length], langchain_messages(exchange(n))
        start = time.perf_counter_ns()
        history.add_messages(pair)
        return elapsed_since(start)

    def restore(self, length: int) -> None:
        history = self.histories[length]
        history.redis_client.lpop(history.key, 2)


class AdapterHistory(LangchainHistory):
    """``ChatLedgerHistory(store, session_id, last=20)`` per length, timed as
    `LangchainHistory` but reading the window an agent prompts with: all of a
    10-message session, the newest 20 of a longer one."""

    label = ADAPTER

    def __init__(self, store: Store) -> None:
        self.store = store
        self.histories = {
            length: ChatLedgerHistory(store, f"adapter-{session_id(length)}", last=WINDOW)
            for length in LENGTHS
        }

    def fill(self, length: int) -> None:
        for batch in batches(langchain_messages(conversation(length))):
            self.histories[length].add_messages(batch)

    def size(self, length: int) -> int:
        info = self.store.session(f"adapter-{session_id(length)}").info()
        return 0 if info is None else info.count

    def turn(self, length: int, n: int) -> int:
        history, pair = self.histories[length], langchain_messages(exchange(n))
        start = time.perf_counter_ns()
        messages = history.messages
        history.add_messages(pair)
        elapsed = elapsed_since(start)
        expect("ChatLedgerHistory.messages", len(messages), min(WINDOW, length))
        return elapsed

    def restore(self, length: int) -> None:
        self.store.session(f"adapter-{session_id(length)}").trim(keep_last=length)


# -- raw redis-py -------------------------------------------------------------------------


def raw_messages(texts: list[Text]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in texts]


class RawRedis:
    """A hand-rolled list of JSON strings per length, oldest first."""

    label = RAW

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.keys = {length: f"raw:{session_id(length)}" for length in LENGTHS}

    def fill(self, length: int) -> None:
        for batch in batches(raw_messages(conversation(length))):
            self.client.rpush(self.keys[length], *[json.dumps(message) for message in batch])

    def size(self, length: int) -> int:
        return int(self.client.llen(self.keys[length]))

    def turn(self, length: int, n: int) -> int:
        key, pair = self.keys[length], raw_messages(exchange(n))
        start = time.perf_counter_ns()
        window = [json.loads(entry) for entry in self.client.lrange(key, -WINDOW, -1)]
        self.client.rpush(key, *[json.dumps(message) for message in pair])
        elapsed = elapsed_since(start)
        expect("LRANGE -20 -1", len(window), min(WINDOW, length))
        return elapsed

    def append(self, length: int, n: int) -> int:
        key, pair = self.keys[length], raw_messages(exchange(n))
        start = time.perf_counter_ns()
        self.client.rpush(key, *[json.dumps(message) for message in pair])
        return elapsed_since(start)

    def restore(self, length: int) -> None:
        self.client.rpop(self.keys[length], 2)


# -- measuring ----------------------------------------------------------------------------


def measure(entries: list[tuple[Contender, Rounds]]) -> list[Cell]:
    """Fill every history, then time one turn and one append per length and round.

    The contenders take turns round by round, so that a shared, noisy machine
    drifting during the run slows them all alike and the ratios stay honest.
    """
    for contender, _ in entries:
        for length in LENGTHS:
            contender.fill(length)
            expect(f"{contender.label} history size", contender.size(length), length)
    cells = [{length: Cell(c.label, length) for length in LENGTHS} for c, _ in entries]
    gc.collect()
    gc.freeze()  # the histories built: later collections need not walk them mid-timing
    for round_ in range(max(rounds.total for _, rounds in entries)):
        for (contender, rounds), by_length in zip(entries, cells, strict=True):
            if round_ < rounds.total:
                time_round(contender, by_length, round_, timed=round_ >= rounds.warmup)
    for contender, _ in entries:
        for length in LENGTHS:
            expect(f"{contender.label} history size", contender.size(length), length)
    return [cell for by_length in cells for cell in by_length.values()]


def time_round(contender: Contender, cells: dict[int, Cell], round_: int, *,
               timed: bool) -> None:
    for length, cell in cells.items():
        turn = contender.turn(length, round_)
        contender.restore(length)
        append = contender.append(length, round_)
        contender.restore(length)
        if timed:
            cell.turns.append(turn)
            cell.appends.append(append)


def side_by_side(first: Contender, second: Contender, rounds: Rounds) -> list[Cell]:
    """The two LangChain histories at the shortest length, alternating turn by turn
    with nothing else in between: in the main loop each follows another
    contender's turn at 10,000 messages, whose burst of work a shared machine
    makes the next operation pay for."""
    short = LENGTHS[0]
    cells = [Cell(f"{c.label} {PAIRED}", short) for c in (first, second)]
    gc.collect()
    for round_ in range(rounds.total):
        for contender, cell in zip((first, second), cells, strict=True):
            turn = contender.turn(short, round_)
            contender.restore(short)
            append = contender.append(short, round_)
            contender.restore(short)
            if round_ >= rounds.warmup:
                cell.turns.append(turn)
                cell.appends.append(append)
    return cells


async def measure_async(contender: ChatledgerAsync, rounds: Rounds) -> list[Cell]:
    """`measure`, awaited: the same steps in the same order."""
    for length in LENGTHS:
        await contender.fill(length)
        expect(f"{contender.label} history size", await contender.size(length), length)
    cells = {length: Cell(contender.label, length) for length in LENGTHS}
    gc.collect()
    gc.freeze()  # the histories built: later collections need not walk them mid-timing
    for round_ in range(rounds.total):
        for length, cell in cells.items():
            turn = await contender.turn(length, round_)
            await contender.restore(length)
            append = await contender.append(length, round_)
            await contender.restore(length)
            if round_ >= rounds.warmup:
                cell.turns.append(turn)
                cell.appends.append(append)
    for length in LENGTHS:
        expect(f"{contender.label} history size", await contender.size(length), length)
    return list(cells.values())


async def measure_chatledger_async(url: str, rounds: Rounds) -> list[Cell]:
    async with await open_async_store(url, namespace="bench-async") as store:
        sessions = {length: store.session(session_id(length)) for length in LENGTHS}
        return await measure_async(ChatledgerAsync(sessions), rounds)


def run(server: RedisServer, config: Config) -> list[Cell]:
    """Measure the sync contenders interleaved, then chatledger async on its own loop."""
    client = redis.Redis.from_url(server.url)
    try:
        with open_store(server.url, namespace="bench-sync") as store:
            sessions = {length: store.session(session_id(length)) for length in LENGTHS}
            langchain, adapter = LangchainHistory(server.url), AdapterHistory(store)
            cells = measure([
                (ChatledgerSync(sessions), config.rounds),
                (langchain, config.langchain_rounds),
                (RawRedis(client), config.rounds),
                (adapter, config.langchain_rounds),
            ])
            cells += side_by_side(adapter, langchain, config.rounds)
    finally:
        client.close()
    async_cells = asyncio.run(measure_chatledger_async(server.url, config.rounds))
    return [*cells[:len(LENGTHS)], *async_cells, *cells[len(LENGTHS):]]  # sync, async, peers


@dataclass(frozen=True)
class Footprint:
    """What a session of ``messages`` 200-character messages costs the server."""

    messages: int
    bytes_per_message: float  # MEMORY USAGE of its keys, exact (SAMPLES 0)
    json_per_message: float  # the message as compact JSON: its stored entry's payload

    @property
    def ratio(self) -> float:
        return self.bytes_per_message / self.json_per_message


def footprints(server: RedisServer) -> list[Footprint]:
    """Sessions of 200-character messages, alternating user and assistant, stored by
    chatledger in batches of 1,000, then weighed key by key."""
    found = []
    with open_store(server.url, namespace="bench-bytes") as store:
        for length in BYTES_LENGTHS:
            messages = ledger_messages(
                [("user" if n % 2 == 0 else "assistant", BYTES_TEXT) for n in range(length)])
            session = store.session(session_id(length))
            for batch in batches(messages):
                session.append(batch)
            keys = SessionKeys.of(store.namespace, session_id(length))
            used = sum(int(cast(int, server.command("MEMORY", "USAGE", key, "SAMPLES", "0")))
                       for key in keys)
            payload = sum(len(encode(message)) - 1 for message in messages)  # less the format byte
            found.append(Footprint(length, used / length, payload / length))
    return found


# -- reporting ----------------------------------------------------------------------------


def redis_version(server: RedisServer) -> str:
    info = server.command("INFO", "server")
    if not isinstance(info, bytes):
        raise RuntimeError(f"INFO server answered {info!r}")
    fields = dict(line.split(":", 1) for line in info.decode().splitlines() if ":" in line)
    return fields["redis_version"]


def installed(name: str) -> str:
    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} (not installed)"


def libraries() -> str:
    names = ("redis", "hiredis", "langchain-community", "langchain-core", "orjson")
    return ", ".join(installed(name) for name in names)


def print_config_header(server: RedisServer, config: Config) -> None:
    rounds, slow = config.rounds, config.langchain_rounds
    facts = [
        *environment(),
        ("redis", f"redis-server {redis_version(server)}, private on {server.host}:"
                  f"{server.port}, no RDB, no AOF"),
        ("clients", libraries()),
        ("rounds", f"{rounds.timed} timed per length after {rounds.warmup} warm-up rounds\n"
                   f"({LANGCHAIN}: {slow.timed} after {slow.warmup});\n"
                   "a round is one turn and one append, each timed on exactly N messages"),
    ]
    print_header(
        f"chatledger on Redis: turn = read last {WINDOW} + append 1 user/assistant pair; "
        "append = the pair alone",
        facts,
    )


STATS = (median_us, p90_us)


def print_table(cells: list[Cell]) -> None:
    print(f"{'':<34} {'':>7} {'turn µs':^23} {'append µs':^23}".rstrip())
    print(f"{'backend':<34} {'history':>7} {'median':>11} {'p90':>11} {'median':>11} {'p90':>11}")
    print("-" * 90)
    for cell in cells:
        times = [stat(samples) for samples in (cell.turns, cell.appends) for stat in STATS]
        print(f"{cell.backend:<34} {cell.length:>7,} " + " ".join(f"{t:>11,.1f}" for t in times))
    print()


def verdict(ratio: float, target: float, *, at_most: bool) -> str:
    return "PASS" if (ratio <= target if at_most else ratio >= target) else "MISS"


def print_ratio(label: str, ratio: float, target: float, *, at_most: bool) -> bool:
    """Print one ratio and its verdict; return whether it meets its target."""
    print(f"  {label:<26} {ratio:>8.2f}  {verdict(ratio, target, at_most=at_most)}")
    return verdict(ratio, target, at_most=at_most) == "PASS"


def print_ratios(cells: list[Cell]) -> bool:
    """Print every ratio against its target; return whether all are met."""
    met = []
    turn = {(cell.backend, cell.length): median_us(cell.turns) for cell in cells}
    append = {(cell.backend, cell.length): median_us(cell.appends) for cell in cells}
    short, long = LENGTHS[0], LENGTHS[-1]
    print(f"chatledger turn, median({long:,}) / median({short:,}), "
          f"target ≤ {TURN_FLATNESS_TARGET}:")
    for backend in (CHATLEDGER_SYNC, CHATLEDGER_ASYNC):
        ratio = turn[backend, long] / turn[backend, short]
        met.append(print_ratio(backend, ratio, TURN_FLATNESS_TARGET, at_most=True))
    print(f"{LANGCHAIN} turn / chatledger turn, median at {long:,}, "
          f"target ≥ {LANGCHAIN_TARGET:g}:")
    for backend in (CHATLEDGER_SYNC, CHATLEDGER_ASYNC):
        ratio = turn[LANGCHAIN, long] / turn[backend, long]
        met.append(print_ratio(f"vs {backend}", ratio, LANGCHAIN_TARGET, at_most=False))
    print(f"{CHATLEDGER_SYNC} append / raw RPUSH append, median, target ≤ {APPEND_TARGET:g}:")
    for length in LENGTHS:
        ratio = append[CHATLEDGER_SYNC, length] / append[RAW, length]
        met.append(print_ratio(f"history {length:,}", ratio, APPEND_TARGET, at_most=True))
    print(f"{CHATLEDGER_SYNC} turn / raw LRANGE+RPUSH turn, median, "
          f"target ≤ {RAW_TURN_TARGET:g}:")
    for length in LENGTHS:
        ratio = turn[CHATLEDGER_SYNC, length] / turn[RAW, length]
        met.append(print_ratio(f"history {length:,}", ratio, RAW_TURN_TARGET, at_most=True))
    print(f"{ADAPTER} turn / {LANGCHAIN} turn, median at {short:,} (paired run), "
          f"target ≤ {ADAPTER_TARGET:g}:")
    ratio = turn[f"{ADAPTER} {PAIRED}", short] / turn[f"{LANGCHAIN} {PAIRED}", short]
    met.append(print_ratio(f"history {short:,}", ratio, ADAPTER_TARGET, at_most=True))
    return all(met)


def print_footprints(found: list[Footprint]) -> bool:
    """Print the stored bytes per message against compact JSON; return whether all are met."""
    print(f"stored bytes per {len(BYTES_TEXT)}-character message (MEMORY USAGE of the "
          f"session's keys) / its compact JSON, target ≤ {BYTES_TARGET:g}:")
    met = []
    for footprint in found:
        label = (f"{footprint.messages:,} messages: {footprint.bytes_per_message:,.1f} B "
                 f"/ {footprint.json_per_message:,.1f} B")
        met.append(print_ratio(label, footprint.ratio, BYTES_TARGET, at_most=True))
    return all(met)


def parse_args(argv: list[str] | None) -> tuple[Config, bool]:
    return report_args(
        argv, __doc__, quick_help="50 timed rounds instead of 200 (15 instead of 60)",
        quick=Config(rounds=Rounds(timed=50, warmup=10), langchain_rounds=Rounds(15, 3)),
        full=Config(rounds=Rounds(timed=200, warmup=20), langchain_rounds=Rounds(60, 5)))


def main(argv: list[str] | None = None) -> int:
    config, check = parse_args(argv)
    with RedisServer() as server:
        print_config_header(server, config)
        cells = run(server, config)
        found = footprints(server)
    print_table(cells)
    met = print_ratios(cells)
    met = print_footprints(found) and met
    return 1 if check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
