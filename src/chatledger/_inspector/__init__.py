"""``chatledger serve``: a read-only web inspector of a store.

A small ASGI app (Starlette, Jinja2 templates with autoescaping, no front-end
build): the sessions of a namespace, a conversation, a LangGraph thread's
checkpoints, the health findings of ``doctor`` and the store's own Prometheus
metrics. It only ever reads: every route is a GET, and the store it opens is
used through its read calls alone (``sessions``, ``info``, ``read``, the
backend's ``checks``; the LangGraph saver's ``list``).

Bound to anything but loopback it requires a token (:mod:`.access`). Every page
is rendered with autoescaping, so nothing a user typed into a conversation can
run in the page, and the store's URL is only ever shown redacted.

The package imports nothing itself: :mod:`.access` needs only the standard
library (the CLI checks a binding before it imports the extra), :mod:`.app`
needs the ``inspector`` extra.
"""
