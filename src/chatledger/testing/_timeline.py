"""One session's records, indexed the way the checks look at them.

A message is known by its id, or by its text when it has none (a store that
drops ids): that is its *key*, the same for what was appended and what was read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ._recorder import Record
from ._records import AppendRecord, ReadRecord, SeenMessage, SummaryRecord


def key_of(identity: str | None, text: str) -> str:
    # The NUL keeps a text from ever equalling an id.
    return identity if identity is not None else "\0" + text


def keys(append: AppendRecord) -> list[str]:
    return [key_of(i, t) for i, t in zip(append.ids, append.texts, strict=True)]


def seen_key(message: SeenMessage) -> str:
    return key_of(message.id, message.text)


@dataclass
class Timeline:
    """A session's appends and summaries (in start order) and successful reads
    (in start order, final reads last), with each read's seqs by key computed once."""

    session: str
    appends: list[AppendRecord] = field(default_factory=list)
    reads: list[ReadRecord] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    _positions: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    _writers: dict[str, int] | None = None

    def positions(self, read: ReadRecord) -> dict[str, list[int]]:
        """Every seq at which ``read`` saw each key."""
        found = self._positions.get(id(read))
        if found is None:
            found = {}
            for message in read.messages:
                found.setdefault(seen_key(message), []).append(message.seq)
            self._positions[id(read)] = found
        return found

    def writers(self, key: str) -> int:
        """How many messages the appends sent with ``key`` (an id, or a text without
        one), whether stored or not."""
        if self._writers is None:
            self._writers = {}
            for append in self.appends:
                for sent in keys(append):
                    self._writers[sent] = self._writers.get(sent, 0) + 1
        return self._writers.get(key, 0)

    @property
    def acknowledged(self) -> list[AppendRecord]:
        return [a for a in self.appends if a.outcome == "ok"]


def timelines(records: Iterable[Record]) -> dict[str, Timeline]:
    by_session: dict[str, Timeline] = {}
    for record in sorted(records, key=lambda r: (r.start, r.end)):
        timeline = by_session.setdefault(record.session, Timeline(record.session))
        if isinstance(record, AppendRecord):
            timeline.appends.append(record)
        elif isinstance(record, SummaryRecord):
            timeline.summaries.append(record)
        elif record.outcome == "ok":
            timeline.reads.append(record)
    return by_session
