"""Pre-seeded sessions: a conversation written before the test starts.

A transcript is a list of messages: ``Message`` objects, or records such as
``{"role": "user", "content": "hi"}`` with any other field of a message
(``id``, ``name``, ``tool_calls``, ``tool_call_id``, ``metadata``,
``created_at`` as ISO 8601). Files may be JSON (a list), JSON Lines (a record
a line, as ``chatledger export`` writes; its ``seq`` is ignored, its ``data_b64``
read as the message's data, and a file holding more than one ``session`` is
refused: seeding it would merge conversations) or YAML (a list; needs PyYAML).
The whole transcript is one atomic append, so a seeded session is at version
``len(transcript)``. A record the store refuses is named by its place in the
transcript (``transcript[3].role``), not by the append's batch.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..._errors import InvalidMessage
from ..._messages import Message
from ..._sync.store import Session

__all__ = ["Transcript", "load_transcript", "seed"]

Transcript = Sequence[Message | Mapping[str, Any]] | str | Path
_FIELDS = {"role", "content", "id", "name", "tool_calls", "tool_call_id", "metadata",
           "created_at"}
_IGNORED = {"session", "seq", "user"}  # what `chatledger export` adds to each line
_DATA = "data_b64"  # an exported message's data (chatledger.transfer), as base64
_BATCH = "messages["  # how an append names a message of its batch


def seed(session: Session, transcript: Transcript) -> int:
    """Append ``transcript`` to ``session`` as one batch; return the session's version."""
    messages = load_transcript(transcript)
    try:
        return session.append(messages).version
    except InvalidMessage as exc:  # its index is the transcript's: named so
        if not exc.field.startswith(_BATCH):
            raise
        raise InvalidMessage("transcript[" + exc.field[len(_BATCH):], exc.reason) from None


def load_transcript(transcript: Transcript) -> list[Message]:
    """The messages of a transcript given inline or as a file path."""
    records = _read_file(Path(transcript)) if isinstance(transcript, (str, Path)) else transcript
    return [_message(record, index) for index, record in enumerate(records)]


def _read_file(path: Path) -> Iterable[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":  # lines end at \n only: text may hold U+2028 and the like
        return _one_session([_json(line, path, number) for number, line
                             in enumerate(text.split("\n"), 1) if line.strip()], path)
    if path.suffix == ".json":
        return _listed(_json(text, path), path)
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]  # noqa: PLC0415 -- YAML only
        except ImportError as exc:
            raise ValueError(f"{path}: YAML transcripts need PyYAML (pip install pyyaml)") from exc
        return _listed(yaml.safe_load(text), path)
    raise ValueError(f"{path}: a transcript is .json, .jsonl, .yaml or .yml")


def _json(text: str, path: Path, line: int | None = None) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        where = f"{path}, line {line}" if line is not None else str(path)
        raise ValueError(f"{where}: not JSON ({exc})") from None


def _listed(document: Any, path: Path) -> list[Any]:
    if not isinstance(document, list):
        raise ValueError(f"{path}: a transcript is a list of messages, "
                         f"got {type(document).__name__}")
    return document


def _one_session(records: list[Any], path: Path) -> list[Any]:
    """The records of an export, refused when they are of several sessions: seeding
    them into one would interleave conversations as no store ever held them."""
    sessions = list(dict.fromkeys(r.get("session") for r in records
                                  if isinstance(r, Mapping) and "session" in r))
    if len(sessions) > 1:
        named = ", ".join(map(repr, sessions[:3])) + (", ..." if len(sessions) > 3 else "")
        raise ValueError(f"{path}: the lines of {len(sessions)} sessions ({named}); a "
                         "transcript is one session's (`chatledger export SESSION`)")
    return records


def _message(record: Message | Mapping[str, Any], index: int) -> Message:
    if isinstance(record, Message):
        return record
    if not isinstance(record, Mapping):
        raise ValueError(f"transcript[{index}]: expected a message record, got "
                         f"{type(record).__name__}")
    where = f"transcript[{index}]"
    unknown = sorted(set(record) - _FIELDS - _IGNORED - {_DATA})
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} "
                         f"(known: {', '.join(sorted(_FIELDS))})")
    missing = [name for name in ("role", "content") if name not in record]
    if missing:
        raise ValueError(f"{where}: no {missing[0]!r}: a message record has a role and "
                         "content")
    fields = {name: value for name, value in record.items() if name in _FIELDS}
    if isinstance(fields.get("created_at"), str):
        try:
            fields["created_at"] = datetime.fromisoformat(fields["created_at"])
        except ValueError:
            raise ValueError(f"{where}.created_at: {fields['created_at']!r} is not an "
                             "ISO 8601 time") from None
    if _DATA in record:
        fields["data"] = _data(record[_DATA], where)
    return Message(**fields)


def _data(text: object, where: str) -> bytes:
    try:
        if not isinstance(text, str):
            raise TypeError(f"got {type(text).__name__}")
        return base64.b64decode(text, validate=True)
    except (TypeError, binascii.Error) as exc:
        raise ValueError(f"{where}.{_DATA}: not base64 text ({exc})") from None
