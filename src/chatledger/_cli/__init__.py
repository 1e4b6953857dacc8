"""The ``chatledger`` command: a demo, and tools to inspect and operate a store."""

from __future__ import annotations

from .main import main

__all__ = ["main"]
