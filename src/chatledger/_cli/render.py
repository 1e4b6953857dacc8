"""Messages as people read them: aligned columns, escaped controls, long text cut short."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import orjson
from rich.text import Text

from .. import _core
from .._context import summary_through
from .._errors import CorruptEntryError, EncryptionKeyError
from .._messages import ContentBlock, Message
from .._text import escape, escape_line

ROLE_STYLES = {"user": "bold green", "assistant": "bold cyan", "system": "bold magenta",
               "tool": "bold yellow"}
SHORT_CHARS = 600
SHORT_LINES = 12
DETAIL_CHARS = 300


@dataclass(frozen=True)
class Layout:
    """How to lay messages out: column widths, line width (None: a pipe), cutting."""

    seq_width: int
    width: int | None = None
    full: bool = False

    @property
    def indent(self) -> int:
        return self.seq_width + 2 + 25 + 2 + 9 + 2  # seq, time, role and their gaps


def message_text(message: Message, layout: Layout) -> Text:
    """One message: a head (seq, time, role) and its body lines, indented under it."""
    stamp = message.created_at.isoformat(sep=" ", timespec="seconds")
    out = Text()
    out.append(f"{message.seq or '':>{layout.seq_width}}  ", style="dim")
    out.append(f"{stamp:<25}  ", style="dim")
    out.append(f"{message.role:<9}  ", style=ROLE_STYLES.get(message.role, "bold"))
    return _indented(out, _body(message, layout), layout)


def damaged_text(exc: CorruptEntryError, layout: Layout) -> Text:
    """A stored entry that cannot be decoded, in its message's place: its seq, DAMAGED
    (SEALED for one the keyring cannot open) across the time and role columns, and why,
    in the words of ``chatledger doctor``."""
    label = "SEALED" if isinstance(exc, EncryptionKeyError) else "DAMAGED"
    out = Text()
    out.append(f"{exc.seq:>{layout.seq_width}}  ", style="dim")
    out.append(f"{label:<{layout.indent - layout.seq_width - 2}}", style="bold red")
    return _indented(out, _wrapped([(escape(_core.entry_damage(exc)), "red")], layout),
                     layout)


def _indented(head: Text, lines: list[tuple[str, str]], layout: Layout) -> Text:
    """``head`` followed by ``lines``, the first beside it, the others indented under it."""
    for number, (line, style) in enumerate(lines):
        head.append(f"\n{'':<{layout.indent}}" if number else "")
        head.append(line, style=style)
    return head


def _body(message: Message, layout: Layout) -> list[tuple[str, str]]:
    through = summary_through(message)
    lines = [] if through is None else [(f"[summary of seqs up to {through}]", "magenta")]
    lines += [(line, "") for line in _content_lines(message, layout)]
    lines += [(line, "cyan") for line in _tool_lines(message)]
    if message.name:
        lines.append((f"name: {escape_line(message.name)}", "dim"))
    if message.metadata:
        lines.append((f"metadata: {_compact(message.metadata, layout.full)}", "dim"))
    if message.data is not None:  # opaque: its size, never its bytes on a terminal
        lines.append((f"<{len(message.data):,} bytes of data>", "dim"))
    return _wrapped(lines or [("", "")], layout)


def _content_lines(message: Message, layout: Layout) -> list[str]:
    prefix = f"[result of {escape_line(message.tool_call_id)}] " if message.tool_call_id else ""
    blocks = [message.content] if isinstance(message.content, str) else message.content
    text = prefix + "\n".join(_block(block, layout.full) for block in blocks)
    return _cut(escape(text), layout.full).split("\n") if text else []


def _block(block: ContentBlock, full: bool) -> str:
    if isinstance(block, str):
        return block
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return f"[{block.get('type', 'block')} block] {_compact(block, full)}"


def _tool_lines(message: Message) -> list[str]:
    return [f"-> {escape_line(call['name'])}({_compact(call['args'], True)}) "
            f"[{escape_line(call['id'])}]" for call in message.tool_calls]


def _compact(value: Any, full: bool) -> str:
    text = escape(orjson.dumps(value).decode())
    return text if full or len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "..."


def _cut(text: str, full: bool) -> str:
    """Long text cut to a screenful, saying how much more there is."""
    if full:
        return text
    kept = "\n".join(text.split("\n")[:SHORT_LINES])[:SHORT_CHARS]
    hidden = len(text) - len(kept)
    return kept if hidden <= 0 else f"{kept}... [{hidden:,} more characters; --full shows all]"


def _wrapped(lines: list[tuple[str, str]], layout: Layout) -> list[tuple[str, str]]:
    """On a terminal, lines broken to fit beside the columns; in a pipe, left whole."""
    room = None if layout.width is None else max(20, layout.width - layout.indent)
    if room is None:
        return lines
    return [(part, style) for line, style in lines
            for part in (textwrap.wrap(line, room, replace_whitespace=False) or [""])]
