"""Pages from Jinja2 templates, every value autoescaped.

Autoescaping is what keeps a message like ``<script>...</script>`` text on the
page; before it, every value shown has its control and bidi characters written
as escapes (``\\u202e``), as ``chatledger show`` writes them, so that text which
reorders or hides what surrounds it is shown, not obeyed. The filters format
times and durations, and never mark anything safe.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from .._text import duration, escape

__all__ = ["render"]


def _when(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _query(value: str) -> str:
    """An id as a query parameter's value: ids go in queries, never in paths, where
    a browser would resolve an id like ``..`` as a path segment."""
    return quote(value, safe="")


def _visible(value: Any) -> Any:
    # A macro's output is Markup, its values already made visible and escaped inside it.
    return escape(value) if isinstance(value, str) and not isinstance(value, Markup) else value


_ENVIRONMENT = Environment(
    finalize=_visible,
    loader=PackageLoader("chatledger._inspector", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.filters.update(when=_when, duration=duration, q=_query)


def render(template: str, **context: Any) -> str:
    return _ENVIRONMENT.get_template(template).render(**context)
