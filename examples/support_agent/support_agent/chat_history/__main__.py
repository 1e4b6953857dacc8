"""``python -m support_agent.chat_history URL CUSTOMER MESSAGE...``: turns of the
chat-history version, in a process of their own.

Prints one answer a line.
"""

from __future__ import annotations

import sys

from chatledger import open_store

from .agent import SupportAgent


def main(argv: list[str]) -> int:
    url, customer, *messages = argv
    with open_store(url) as store:
        agent = SupportAgent(store)
        for text in messages:
            print(agent.handle(customer, text), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
