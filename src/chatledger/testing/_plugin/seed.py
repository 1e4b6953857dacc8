"""Pre-seeded sessions: a conversation written before the test starts.

A transcript is a list of messages: ``Message`` objects, or records such as
``{"role": "user", "content": "hi"}`` with any other field of a message
(``id``, ``name``, ``tool_calls``, ``tool_call_id``, ``metadata``,
``created_at`` as ISO 8601). Files may be JSON (a list), JSON Lines (a record
a line, as ``chatledger export`` writes; its ``session`` and ``seq`` are
ignored) or YAML (a list; needs PyYAML). The whole transcript is one atomic
append, so a seeded session is at version ``len(transcript)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..._messages import Message
from ..._sync.store import Session

__all__ = ["Transcript", "load_transcript", "seed"]

Transcript = Sequence[Message | Mapping[str, Any]] | str | Path
_FIELDS = {"role", "content", "id", "name", "tool_calls", "tool_call_id", "metadata",
           "created_at"}
_IGNORED = {"session", "seq"}  # what `chatledger export` adds to each line


def seed(session: Session, transcript: Transcript) -> int:
    """Append ``transcript`` to ``session`` as one batch; return the session's version."""
    messages = load_transcript(transcript)
    return session.append(messages).version


def load_transcript(transcript: Transcript) -> list[Message]:
    """The messages of a transcript given inline or as a file path."""
    records = _read_file(Path(transcript)) if isinstance(transcript, (str, Path)) else transcript
    return [_message(record, index) for index, record in enumerate(records)]


def _read_file(path: Path) -> Iterable[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if path.suffix == ".json":
        return _listed(json.loads(text), path)
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]  # noqa: PLC0415 -- YAML only
        except ImportError as exc:
            raise ValueError(f"{path}: YAML transcripts need PyYAML (pip install pyyaml)") from exc
        return _listed(yaml.safe_load(text), path)
    raise ValueError(f"{path}: a transcript is .json, .jsonl, .yaml or .yml")


def _listed(document: Any, path: Path) -> list[Any]:
    if not isinstance(document, list):
        raise ValueError(f"{path}: a transcript is a list of messages, "
                         f"got {type(document).__name__}")
    return document


def _message(record: Message | Mapping[str, Any], index: int) -> Message:
    if isinstance(record, Message):
        return record
    if not isinstance(record, Mapping):
        raise ValueError(f"transcript[{index}]: expected a message record, got "
                         f"{type(record).__name__}")
    unknown = sorted(set(record) - _FIELDS - _IGNORED)
    if unknown:
        raise ValueError(f"transcript[{index}]: unknown field {unknown[0]!r} "
                         f"(known: {', '.join(sorted(_FIELDS))})")
    fields = {name: value for name, value in record.items() if name in _FIELDS}
    if isinstance(fields.get("created_at"), str):
        fields["created_at"] = datetime.fromisoformat(fields["created_at"])
    return Message(**fields)
