"""``python -m support_agent.chat_history URL CUSTOMER MESSAGE...``: turns of the
chat-history version, in a process of their own.

Prints one answer a line.
"""

from __future__ import annotations

import sys

from .._process import run_turns
from .agent import SupportAgent

if __name__ == "__main__":
    sys.exit(run_turns(SupportAgent, sys.argv[1:]))
