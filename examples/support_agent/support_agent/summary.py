"""What the agent keeps of old turns when its state is summarized: every fact
the customer gave, word for word.

A real deployment gives ``SummarizationMiddleware`` a chat model (its default
prompt keeps facts); this summarizer keeps each customer message that states a
fact (a name, an order number), so a test can check that none is lost, and the
scripted model reads the summary like the customer's own words. The transcript
(``TranscriptMiddleware``) keeps every message, summarized or not.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage

from .model import FACT_PATTERNS

HEADER = "What the customer told us so far:"


def summarize_facts(messages: list[BaseMessage]) -> str:
    """The previous summary's facts, then the facts of ``messages``, one a line."""
    lines: list[str] = []
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        text = str(message.content)
        if message.additional_kwargs.get("lc_source") == "summarization":
            lines += text.partition(HEADER)[2].strip().splitlines()
        elif any(pattern.search(text) for pattern in FACT_PATTERNS):
            lines.append(text)
    return "\n".join([HEADER, *dict.fromkeys(lines)])
