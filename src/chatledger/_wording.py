"""Words several of chatledger's messages share: how to install an extra, and an article."""

from __future__ import annotations

__all__ = ["install_hint", "with_article"]


def install_hint(extras: str) -> str:
    """How to install ``extras`` (``"redis"``, ``"langchain,postgres"``): chatledger is on no
    package index, so from a checkout, never ``pip install "chatledger[...]"``."""
    return f'pip install -e ".[{extras}]" in a chatledger checkout'


def with_article(word: str) -> str:
    """``an int``, ``a float``: ``word`` with its indefinite article."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
