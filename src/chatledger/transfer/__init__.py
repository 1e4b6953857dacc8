"""Sessions to a file of JSON Lines and back, keeping ids, seqs, timestamps and every byte.

``export_sessions(store, out)`` writes one message a line (see
:func:`json_line`); ``import_sessions(store, "backup.jsonl")`` brings them
back into any store. ``chatledger export`` and ``chatledger import`` are
these two functions.

An import reads the file twice, a line at a time, so that its memory does not
grow with the file: first every line is checked as an append would check it
(a line it would refuse raises :class:`BadRecord`, naming the line and the
field, and nothing is written), then the sessions are imported in batches
(see :mod:`chatledger.transfer._importing` for how seqs are kept). A file that
cannot be read twice (a pipe) is first copied to a temporary file.
"""

from __future__ import annotations

from ._api import ExportReport, ImportReport, Progress, export_sessions, import_sessions
from ._errors import BadRecord
from ._importing import SessionImport
from ._records import Emptied, Line, emptied_line, json_line, parse_line, record

__all__ = [
    "BadRecord",
    "Emptied",
    "ExportReport",
    "ImportReport",
    "Line",
    "Progress",
    "SessionImport",
    "emptied_line",
    "export_sessions",
    "import_sessions",
    "json_line",
    "parse_line",
    "record",
]
