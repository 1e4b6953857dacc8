"""Messages as text: for people (a line or a few) and for machines (a JSON line)."""

from __future__ import annotations

import orjson

from ..messages import Message


def format_message(message: Message) -> str:
    """One message as a line or a few: seq, role, text, tool calls."""
    head = f"{message.seq:>5}  {message.role:<9} "
    lines = [head + (message.text or "")]
    lines += [f"{'':>16}-> {call['name']}({orjson.dumps(call['args']).decode()})"
              f" [{call['id']}]" for call in message.tool_calls]
    if message.tool_call_id:
        lines[0] += f"  [result of {message.tool_call_id}]"
    return "\n".join(lines)


def json_line(message: Message, **extra: str) -> str:
    """One message as a line of JSON, every field named in full."""
    record = {**extra, "seq": message.seq, "role": message.role, "content": message.content,
              "id": message.id, "name": message.name, "tool_calls": message.tool_calls,
              "tool_call_id": message.tool_call_id, "metadata": message.metadata,
              "created_at": message.created_at.isoformat()}
    return orjson.dumps(record).decode()
