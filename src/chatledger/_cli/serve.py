"""``chatledger serve [URL]``: the read-only web inspector (``chatledger._inspector``)."""

from __future__ import annotations

import dataclasses
import socket

import click

from .._inspector.access import TOKEN_VARIABLE, check_binding
from .._wording import install_hint
from .console import note
from .failures import Unusable
from .named import serializer
from .target import Target, encryption, target_options

_EXTRA = f"the inspector needs its extra: {install_hint('inspector')}"


@click.command()
@target_options
@click.argument("url", required=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs a token.")
@click.option("--port", type=click.IntRange(0, 65535), default=8484, show_default=True,
              help="Port to listen on.")
@click.option("--token", envvar=TOKEN_VARIABLE, default=None,
              help=f"Every request must present it (env {TOKEN_VARIABLE}, which keeps it "
                   "out of ps and shell history); required unless bound to loopback.")
@click.option("--serde", metavar="MODULE:NAME", default=None,
              help="The serializer the LangGraph threads were written with: one, or a "
                   "callable returning one (e.g. langgraph.checkpoint.serde.encrypted:"
                   "EncryptedSerializer.from_pycryptodome_aes). Default: LangGraph's own.")
@click.pass_obj
def serve(target: Target, url: str | None, *, host: str, port: int, token: str | None,
          serde: str | None) -> None:
    """Browse the store at URL (default: --url) in a web browser, read-only.

    Sessions with search by id prefix, sort and paging; a conversation with
    its tool calls linked to their results; LangGraph threads as checkpoint
    timelines; doctor's health findings; live metrics, and /metrics for
    Prometheus. Every route is a GET: nothing in it can write to the store.

    \b
    Example: chatledger serve sqlite:///bot.db --namespace support-bot
    Example: CHATLEDGER_INSPECTOR_TOKEN=$(openssl rand -hex 16) chatledger serve --host 0.0.0.0
    Example: LANGGRAPH_AES_KEY=... chatledger serve --serde
    langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes
    """
    try:
        check_binding(host, token)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        import uvicorn  # noqa: PLC0415 -- an optional extra

        from .._inspector.app import inspector_app  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover -- the test environment has it
        raise Unusable(_EXTRA) from exc
    threads_serde = None if serde is None else serializer(serde)
    target = dataclasses.replace(target, url=url or target.url)
    with target.store(existing=True) as store:  # reachable (or exit 2) before serving
        shown = store.url
    app = inspector_app(target.url, token=token, serde=threads_serde, local_only=not token,
                        **target.options, **encryption())
    listening = _listen(host, port)
    port = listening.getsockname()[1]  # the one the system picked for --port 0
    note(f"chatledger inspector of {shown} on http://{_bracketed(host)}:{port}/ "
         f"(read-only{', token required' if token else ''}); Ctrl+C stops it")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is this command's
    error (exit 2, in one line), not a log line of the server's."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        listening = socket.socket(family, kind, proto)
    except OSError as exc:
        raise Unusable(f"cannot listen on {_bracketed(host)}:{port}: {exc}") from exc
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(2048)  # connections wait from now on, while the app starts
    except OSError as exc:
        listening.close()
        raise Unusable(f"cannot listen on {_bracketed(host)}:{port}: {exc.strerror}") from exc
    return listening


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


COMMANDS = (serve,)
