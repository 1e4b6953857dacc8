"""Context that fits, without I/O: token counting, summary entries, and the
walk that picks the newest messages fitting a budget.

The walk reads a session from its newest end a page at a time (the stores feed
it pages from the ordinary windowed read, :mod:`chatledger._async.context`), so
a budgeted read touches O(window) entries, never the whole history.

Units. A window never starts with a tool result whose call was left out: the
walk takes messages in *units*, a message that is not a tool result together
with the tool results right after it (an assistant's tool calls and their
results), and moves a cut to keep a unit whole. Tool results with no message
before them (their call was trimmed away) start no window: they are left out.

Summaries are ordinary ledger entries: a ``system`` message whose metadata
holds ``{"chatledger.summary": {"through_seq": k}}``, appended after the
messages it covers. It covers every message with a seq up to ``k``; messages
stored after ``k``, even those appended before the summary itself, are not
covered and stay in the window. Its id is made from ``k``, so two summaries
through the same seq are one entry (the second append is deduplicated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from ._messages import JSON, Message, system

__all__ = [
    "SUMMARY_KEY",
    "TokenCounter",
    "Fit",
    "Walk",
    "approximate_tokens",
    "count_with",
    "SUMMARIZER_IS_ASYNC",
    "cursor_fault",
    "split_unit",
    "unanswered_call",
    "marked_through",
    "fit",
    "plan_compaction",
    "reply_text",
    "summary_prompt",
    "transcript",
    "units_of",
    "summary_entry",
    "summary_through",
]

SUMMARY_KEY = "chatledger.summary"
"""The metadata key that marks a summary entry; its value is ``{"through_seq": k}``."""

TokenCounter = Callable[[Sequence[Message]], int]
"""Counts the tokens of some messages, as the model that will read them would."""

# About four characters a token for English with the common BPE vocabularies,
# and a few tokens a message for the role and the separators the chat formats add.
_CHARS_PER_TOKEN = 4
_TOKENS_PER_MESSAGE = 4


def approximate_tokens(messages: Sequence[Message]) -> int:
    """An estimate of the tokens ``messages`` take: a quarter of their characters.

    Needs no vocabulary, so it works offline; it runs over for code and
    non-Latin scripts (one token a character or more) less than a real
    tokenizer would. Counts the text, the tool calls (as JSON) and a few tokens
    of framing per message; ``data`` bytes are not counted (models are sent text).
    """
    return sum(_approximate(message) for message in messages)


def _approximate(message: Message) -> int:
    chars = len(message.text) + len(message.name or "")
    if message.tool_calls:
        chars += len(orjson.dumps(message.tool_calls))
    if not isinstance(message.content, str):  # blocks that are not text: an image, a file
        chars += sum(len(orjson.dumps(b)) for b in message.content if isinstance(b, dict)
                     and b.get("type") != "text")
    return math.ceil(chars / _CHARS_PER_TOKEN) + _TOKENS_PER_MESSAGE


def count_with(counter: Any) -> TokenCounter:
    """The counter to use: ours by default, a callable on messages, or a LangChain
    chat model (or its ``get_num_tokens_from_messages``), fed converted messages."""
    if counter is None:
        return approximate_tokens
    method = getattr(counter, "get_num_tokens_from_messages", None)
    if method is None and getattr(counter, "__name__", "") == "get_num_tokens_from_messages":
        method = counter
    if method is not None:
        return _checked(_langchain_counter(method))
    if not callable(counter):
        raise TypeError("count_tokens must be a callable on messages or a LangChain chat "
                        f"model, got {type(counter).__name__}")
    return _checked(counter)


def _checked(counter: Callable[[Sequence[Message]], Any]) -> TokenCounter:
    """``counter``, its answers refused unless a count (an int of 0 or more): a float,
    a negative number or None would make ``History.tokens`` a wrong figure, or fail
    deep in the walk."""
    def count(messages: Sequence[Message]) -> int:
        tokens = counter(messages)
        if type(tokens) is not int or tokens < 0:
            raise ValueError(f"count_tokens returned {tokens!r} for {len(messages)} "
                             "message(s): it must return an int of 0 or more")
        return tokens

    return count


def _langchain_counter(method: Callable[[list[Any]], int]) -> TokenCounter:
    from ._langchain_messages import from_ledger  # noqa: PLC0415 -- LangChain only if given

    def count(messages: Sequence[Message]) -> int:
        return method([from_ledger(message, "") for message in messages])

    return count


def summary_through(message: Message) -> int | None:
    """The seq a summary entry covers through; None for any other message.

    A stored summary covers only seqs stored before it, whatever its marker says:
    a marker naming its own seq or a later one (appended as any message, or copied
    from another session with its summary) covers through the seq before it, so a
    message appended after it is never read as covered nor trimmed as such.
    """
    through = marked_through(message)
    if through is None or message.seq is None:
        return through
    return min(through, message.seq - 1)


def marked_through(message: Message) -> int | None:
    """The cursor a summary entry's marker names, as stored (a history checker names
    one at or past its own seq); None for any other message."""
    if message.role != "system":
        return None
    marker = message.metadata.get(SUMMARY_KEY)
    if not isinstance(marker, dict):
        return None
    through = marker.get("through_seq")
    return through if isinstance(through, int) and not isinstance(through, bool) else None


def summary_entry(text: str, through_seq: int) -> Message:
    """The entry that stores ``text`` as the summary of seqs up to ``through_seq``."""
    marker: dict[str, JSON] = {"through_seq": through_seq}
    return system(text, id=f"chatledger-summary-{through_seq}",
                  metadata={SUMMARY_KEY: marker})


def cursor_fault(through_seq: int, seq: int,
                 latest: int | None) -> Literal["ahead", "behind"] | None:
    """What is wrong with a summary at ``seq`` covering through ``through_seq``,
    stored after a summary covering through ``latest`` (None: the first); None
    when nothing is.

    The one rule of cursors: the store refuses a summary that breaks it and
    ``check_history`` names a stored one that does. ``ahead``: it covers its own
    seq or later, seqs that did not exist when it was written (the messages
    appended after it would read as covered, and a trim would drop them).
    ``behind``: it does not cover past the summary before it (the latest cursor
    would move back, leaving uncovered what a trim at the other one dropped).
    """
    if through_seq >= seq:
        return "ahead"
    if latest is not None and through_seq <= latest:
        return "behind"
    return None


@dataclass
class Walk:
    """Messages taken from the newest end, page by page, into units.

    ``budget``: tokens for the window and the summary (None: no limit).
    ``with_summary``: look for the latest summary and take only the messages
    after its cursor. Feed it pages, newest first, while :meth:`wants_more`.
    """

    count: TokenCounter
    budget: int | None
    with_summary: bool
    summary: Message | None = None
    units: list[tuple[list[Message], int]] = field(default_factory=list)  # newest first
    tokens: int = 0
    reached_start: bool = False
    _pending: list[Message] = field(default_factory=list)  # tool results, newest first
    _floor: int = 0  # seqs up to here are covered by the summary found
    _lowest_seen: int = 2**63

    def first_page(self, most: int) -> int:
        """How many entries to read first: fewer than ``most`` for a small budget
        (a message rarely counts under 16 tokens), so a small window stays cheap."""
        if self.budget is None or self.with_summary:
            return most
        return min(most, max(8, self.budget // 16))

    def wants_more(self) -> bool:
        if self.reached_start:
            return False
        if self.with_summary:  # the summary may be anywhere below: go on to it
            return self.summary is None or self._lowest_seen > self._floor + 1
        return self.budget is None or self.tokens <= self.budget

    def feed(self, page: Sequence[Message], first_seq: int) -> None:
        """Take ``page`` (ascending seqs, all below those fed before)."""
        take, lowest = self._take, self._lowest_seen
        for message in reversed(page):
            lowest = message.seq or 0
            if lowest <= self._floor:
                break
            take(message)
        self._lowest_seen = lowest
        if not page or lowest <= max(first_seq, self._floor + 1):
            self.reached_start = True

    def _take(self, message: Message) -> None:
        role = message.role
        if role == "system" and summary_through(message) is not None:
            if self.with_summary and self.summary is None:  # never a window message
                self.summary, self._floor = message, summary_through(message) or 0
                self._drop_covered()
            return
        if self.budget is None:  # no budget: units are made once, at the end
            self._pending.append(message)
            return
        if role == "tool":
            self._pending.append(message)
            return
        unit = [message]
        if self._pending:
            unit += reversed(self._pending)
            self._pending = []
        # Past the budget no older unit can fit: it is kept (the cut is named after
        # the newest one left out) but not counted, as costing more than the budget.
        cost = self.budget + 1 if self.tokens > self.budget else self.count(unit)
        self.units.append((unit, cost))
        self.tokens += cost

    def _drop_covered(self) -> None:
        """A summary found late covers what was taken at or below its cursor."""
        self._pending = [m for m in self._pending if (m.seq or 0) > self._floor]
        self.units = [(u, c) for u, c in self.units if (u[0].seq or 0) > self._floor]
        self.tokens = sum(c for _, c in self.units)

    def window(self) -> Fit:
        """The newest whole units that fit, the summary counted first (without a
        budget: every unit taken, nothing counted).

        Tool results still pending have no call left to go with (trimmed, or
        covered by the summary): they start no window.
        """
        if self.budget is None:  # everything taken: only tool results that lost their call go
            taken = self._pending[::-1]
            start = next((i for i, m in enumerate(taken) if m.role != "tool"), len(taken))
            return Fit(messages=taken[start:], tokens=0, cut_seq=0, over_budget=False)
        summary_cost = 0 if self.summary is None else self.count([self.summary])
        return fit(self.units, self.budget - summary_cost, summary_cost)


@dataclass(frozen=True)
class Fit:
    """The window a walk chose: its messages (oldest first), tokens, cut and flag.

    ``cut_seq``: the newest seq the budget left out (0: it left nothing out).
    ``over_budget``: the newest unit alone did not fit; it is returned anyway.
    """

    messages: list[Message]
    tokens: int
    cut_seq: int
    over_budget: bool


def fit(units: Sequence[tuple[list[Message], int]], budget: int, extra: int = 0) -> Fit:
    """The newest units (given newest first) whose costs fit ``budget``; the
    newest alone, flagged, when even it does not."""
    taken: list[list[Message]] = []
    tokens = 0
    for unit, cost in units:
        if taken and tokens + cost > budget:
            break
        taken.append(unit)
        tokens += cost
        if tokens > budget:
            break
    cut_seq = (units[len(taken)][0][-1].seq or 0) if len(taken) < len(units) else 0
    return Fit(messages=[m for unit in reversed(taken) for m in unit], tokens=tokens + extra,
               cut_seq=cut_seq, over_budget=tokens > budget)


def units_of(messages: Sequence[Message], count: TokenCounter) -> list[tuple[list[Message], int]]:
    """``messages`` (oldest first, no summaries) as units with their costs, newest first."""
    walk = Walk(count=count, budget=2**63, with_summary=False)  # a budget: units are counted
    for message in reversed(messages):
        walk._take(message)
    return walk.units


SUMMARIZER_IS_ASYNC = ("the summarizer is async (it returned an awaitable): give a sync one, "
                       "or use it with an async store (open_async_store)")
"""The error of an async summarizer given to a sync store's ``maybe_compact``."""


def split_unit(messages: Sequence[Message], through_seq: int) -> tuple[int, int] | None:
    """The unit a summary through ``through_seq`` would cut in two, as (its first
    seq, its last result's seq), or None: the message after the cursor is a tool
    result, which reads would then leave out (its call is covered), so that it was
    neither summarized nor kept. ``messages``: the session's, oldest first, from
    at least the cursor on."""
    seqs = [m.seq or 0 for m in messages]
    after = next((i for i, seq in enumerate(seqs) if seq > through_seq), None)
    if after is None or after == 0 or messages[after].role != "tool":
        return None
    first = after - 1
    while first > 0 and messages[first].role == "tool":
        first -= 1
    last = after
    while last + 1 < len(messages) and messages[last + 1].role == "tool":
        last += 1
    return seqs[first], seqs[last]


def unanswered_call(messages: Sequence[Message], through_seq: int) -> int | None:
    """The seq of the first message up to ``through_seq`` whose tool calls are not
    all answered by then, or None. A summary through it covers the calls, and a
    result stored after it (or still to come) is then left out of every read."""
    answered = {m.tool_call_id for m in messages
                if m.role == "tool" and (m.seq or 0) <= through_seq}
    return next((m.seq or 0 for m in messages if (m.seq or 0) <= through_seq
                 and any(call["id"] not in answered for call in m.tool_calls)), None)


def plan_compaction(messages: Sequence[Message], count: TokenCounter, trigger_tokens: int,
                    keep_tokens: int) -> tuple[list[Message], int] | None:
    """What to summarize of the unsummarized ``messages``: the oldest ones beyond
    the newest ``keep_tokens``, and the seq the summary then covers through.

    None when they count ``trigger_tokens`` or less, or nothing would be folded.
    The cut is between units, and before any assistant message whose tool calls
    are not all answered yet: a result arriving later must find its call.
    """
    units = units_of(messages, count)
    if sum(cost for _, cost in units) <= trigger_tokens:
        return None
    first_kept = fit(units, keep_tokens).messages[0].seq or 0
    folded = [m for m in messages if (m.seq or 0) < first_kept]
    folded = folded[:_answered_prefix(folded)]
    if not folded:
        return None
    return folded, (messages[len(folded)].seq or 0) - 1


def _answered_prefix(messages: Sequence[Message]) -> int:
    """How many of ``messages`` come before the oldest one with a tool call not
    answered by a later message (all of them when there is none)."""
    answered: set[str | None] = set()
    end = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if any(call["id"] not in answered for call in message.tool_calls):
            end = index
        if message.role == "tool":
            answered.add(message.tool_call_id)
    return end


SUMMARY_PROMPT = (
    "You keep the memory of a conversation between a user and an assistant. Write a "
    "summary of the conversation below that the assistant can rely on instead of it: "
    "keep every fact the user gave (names, numbers, ids, dates, preferences), every "
    "decision made and every open question, and drop small talk. If it starts with a "
    "previous summary, fold that summary in. Answer with the summary only."
)
"""The instruction a LangChain chat model gets when it is the summarizer."""


def transcript(messages: Sequence[Message]) -> str:
    """The messages as plain text lines, ``role: text``, tool calls as JSON."""
    lines = []
    for message in messages:
        role = "previous summary" if summary_through(message) is not None else message.role
        calls = f" {orjson.dumps(message.tool_calls).decode()}" if message.tool_calls else ""
        lines.append(f"{role}: {message.text}{calls}")
    return "\n".join(lines)


def summary_prompt(messages: Sequence[Message]) -> list[Any]:
    """The LangChain messages that ask a chat model for the summary of ``messages``."""
    from langchain_core.messages import HumanMessage, SystemMessage  # noqa: PLC0415

    return [SystemMessage(SUMMARY_PROMPT), HumanMessage(transcript(messages))]


def reply_text(reply: Any) -> str:
    """The text of a LangChain chat model's reply (content as text or blocks)."""
    content = getattr(reply, "content", reply)
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content
                   if isinstance(b, str) or b.get("type") == "text")
