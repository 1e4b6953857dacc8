"""chatledger's version, for the root package and for what reports it (telemetry)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
