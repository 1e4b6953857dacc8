"""``python -m support_agent URL CUSTOMER MESSAGE...``: turns, in a process of their own.

Prints one answer a line.
"""

from __future__ import annotations

import sys

from ._process import run_turns
from .agent import SupportAgent

if __name__ == "__main__":
    sys.exit(run_turns(SupportAgent, sys.argv[1:]))
