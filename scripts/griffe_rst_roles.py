"""A griffe extension for the API reference (mkdocs.yml's mkdocstrings options).

The docstrings cross-reference in Sphinx's roles (:class:`~chatledger.Store`,
:func:`dedupe`), which Markdown would print as they are; this shows each as the
code it names: ``Store`` (the last part, after ``~``) or ``dedupe``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj):`(~?)([^`]+)`")


def as_code(match: re.Match[str]) -> str:
    name = match[2].rsplit(".", 1)[-1] if match[1] else match[2]
    return f"`{name}`"


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(as_code, obj.docstring.value)
