"""What one hook of ``TranscriptMiddleware`` stores: pure, no I/O.

The agent's state says which of its messages are already in the session: a
private channel lists ``[id, seq]`` for the state's messages already stored,
in state order, and a second one the session's ledger and the highest seq
stored. The list only grows while the state only grows, so the checkpointer
stores the new pairs of a step, not the list (``LedgerSaver`` stores a list
that grew as a delta); when summarization rewrites the state, it shrinks with
it. A hook stores the state's messages that are not listed, in state order,
as one batch. The batch depends only on the state the hook was given, so a
hook run again on the same state (a retried node, a run resumed from its
checkpoint) sends the very same batch, which the store answers with the first
Ack: nothing is stored twice.

A message ``SummarizationMiddleware`` wrote (``lc_source: "summarization"``)
is not a turn of the conversation: it becomes a summary entry of the session
(see :meth:`chatledger.Session.summarize`) covering every seq before the
oldest kept message, so ``read(with_summary=True)`` and ``chatledger show``
tell it apart and the messages it replaced stay stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage

from .._langchain_messages import to_ledger
from .._messages import Message
from .._results import Ack

__all__ = ["CHANNEL", "CHANNEL_AT", "Plan", "Transcribed", "TranscriptAt", "is_summary",
           "plan", "state_ids"]

CHANNEL = "chatledger_transcript"
"""The private state channel listing ``[id, seq]`` of the state's stored messages."""
CHANNEL_AT = "chatledger_transcript_at"
"""The private state channel holding the transcript's ledger and highest seq."""


class TranscriptAt(TypedDict):
    """Where the transcript is: its ledger (so a lost one is loud) and highest seq."""

    last: int
    ledger: str | None


class Transcribed(TypedDict):
    """What the session holds of the agent's state, as a hook works with it."""

    seqs: dict[str, int]  # id -> seq, for the state's messages already stored (0: not kept)
    last: int  # the highest seq this thread's transcript stored
    ledger: str | None  # the session's ledger, so a lost transcript is loud


@dataclass(frozen=True)
class Plan:
    """One hook's writes: a summary entry (maybe), then one batch (maybe)."""

    known: Transcribed
    batch: list[Message] = field(default_factory=list)
    batch_ids: list[str] = field(default_factory=list)
    summary: str | None = None
    summary_id: str | None = None
    through_seq: int = 0

    @property
    def empty(self) -> bool:
        return not self.batch and self.summary_id is None

    def after(self, summary: Ack | None, batch: Ack | None,
              state_ids: Sequence[str]) -> dict[str, Any]:
        """The channels' next values, given the Acks of the writes made."""
        seqs = dict(self.known["seqs"])
        last, ledger = self.known["last"], self.known["ledger"]
        if self.summary_id is not None:
            seqs[self.summary_id] = summary.last_seq if summary else 0
        for ack in (summary, batch):
            if ack is not None:
                last, ledger = max(last, ack.last_seq), ack.ledger or ledger
        if batch is not None:
            seqs.update(zip(self.batch_ids, range(batch.first_seq, batch.last_seq + 1),
                            strict=True))
        at: TranscriptAt = {"last": last, "ledger": ledger}
        return {CHANNEL: [[i, seqs[i]] for i in state_ids if i in seqs], CHANNEL_AT: at}


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a summary that LangChain's SummarizationMiddleware wrote."""
    return message.additional_kwargs.get("lc_source") == "summarization"


def plan(messages: Sequence[BaseMessage], state: Any, session: str) -> Plan:
    """What to store of ``messages`` (the agent's state) that its channels do not list."""
    at: TranscriptAt = state.get(CHANNEL_AT) or TranscriptAt(last=0, ledger=None)
    known: Transcribed = {"seqs": {str(i): int(seq) for i, seq in state.get(CHANNEL) or ()},
                          "last": at["last"], "ledger": at["ledger"]}
    ids = state_ids(messages, session)
    fresh = [(i, m) for i, m in zip(ids, messages, strict=True) if i not in known["seqs"]]
    summaries = [(i, m) for i, m in fresh if is_summary(m)]
    turns = [(i, m) for i, m in fresh if not is_summary(m)]
    batch = [to_ledger(m, ledger_id=i, path=f"messages[{n}]") for n, (i, m) in enumerate(turns)]
    if not summaries:
        return Plan(known, batch, [i for i, _ in turns])
    summary_id, summary = summaries[-1]
    return Plan(known, batch, [i for i, _ in turns], summary=str(summary.text),
                summary_id=summary_id, through_seq=_cursor(messages, ids, summary_id, known))


def state_ids(messages: Sequence[BaseMessage], session: str) -> list[str]:
    """Each message's id; a message without one (LangGraph's reducer gives every
    message one, but a custom state may not) gets one derived from the session,
    the nearest id before it, how far back that is, and its content, so every
    hook, and every process, names it alike."""
    ids: list[str] = []
    anchor, distance = "", 0
    for message in messages:
        if message.id:
            anchor, distance = message.id, 0
            ids.append(message.id)
            continue
        distance += 1
        ids.append(_derived_id(session, anchor, distance, message))
    return ids


def _cursor(messages: Sequence[BaseMessage], ids: Sequence[str], summary_id: str,
            known: Transcribed) -> int:
    """The last seq the summary covers: everything stored before the oldest message
    kept after it (all that stored, when none of the kept ones was stored yet)."""
    after = ids[ids.index(summary_id) + 1:]
    kept = [known["seqs"][i] for i in after if known["seqs"].get(i)]
    return min(kept) - 1 if kept else known["last"]


def _derived_id(session: str, anchor: str, distance: int, message: BaseMessage) -> str:
    # repr, not JSON: a message the store will refuse (a lone surrogate) still gets
    # an id, so the refusal names the field instead of this hash failing first.
    fingerprint = repr([session, anchor, distance, message.model_dump()])
    return "lct-" + hashlib.sha256(fingerprint.encode("utf-8", "surrogatepass")).hexdigest()[:40]
