"""verify: a bounded chaos run against a live deployment, then the history check.

Runs are short (2 s, 2 processes): what they assert is the verdict and that the
figures and faults reported are the run's own, not how fast anything went.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chatledger import Ack, RetryPolicy, open_store, user
from chatledger._cli import main
from chatledger._cli import verify as cli_verify
from chatledger.testing import (
    ConcurrentRun,
    FaultProxy,
    Recorder,
    RedisServer,
    Verification,
    check_history,
    free_port,
)
from chatledger.testing import _verify as verify_module
from chatledger.testing._fault_schedule import KINDS, Fault, FaultPlayer, plan

QUICK = ["--duration", "2", "--processes", "2"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["verify", *args])


def namespace_of(result: Result) -> str:
    return result.stdout.split("namespace '", 1)[1].split("'", 1)[0]


@pytest.mark.slow
def test_a_clean_run_on_sqlite_prints_the_figures_and_keeps_with_keep(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    open_store(url).close()
    result = run(url, *QUICK, "--keep")
    assert result.exit_code == 0, result.output
    assert "faults: none (SQLite is a file, with no network in between)" in result.stdout
    assert "no faults can be injected" in result.stderr
    assert "history check: ok, no anomalies" in result.stdout
    for figure in ("acknowledged", "0 lost, 0 duplicated, 0 torn", "went backwards",
                   "appends/s", "longest unavailability", "append latency: p50"):
        assert figure in result.stdout
    assert result.stdout.rstrip().endswith("kept, once, whole and in order")
    with open_store(url, namespace=namespace_of(result)) as store:
        assert any(name.startswith("verify-") for name in store.sessions())  # --keep kept them


@pytest.mark.slow
def test_faults_on_a_spawned_redis_are_injected_and_survived() -> None:
    # A seed whose plan opens with an outage longer than a worker's retry
    # deadline, early enough that both workers are in it: some operations fail.
    seed = next(s for s in range(1000) if (first := plan(s, 2.0)[0]).kind in ("outage", "hang")
                and first.at <= 0.6 and first.seconds >= 1.2)
    result = run("--local", *QUICK, "--seed", str(seed), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["anomalies"] == [] and report["counts"] == {}
    assert report["verdict"] == "ok: every acknowledged append was kept, once, whole and in order"
    assert report["seed"] == seed and report["processes"] == 2 and report["duration"] == 2
    assert report["url"].startswith("redis://127.0.0.1:")
    assert report["namespace"].startswith("default-verify-") and report["kept"] is False
    faults = report["faults"]
    assert faults["proxied"] is True and faults["why_not"] is None
    assert faults["injected"][0] == {"kind": plan(seed, 2.0)[0].kind,
                                     "at": plan(seed, 2.0)[0].at,
                                     "seconds": plan(seed, 2.0)[0].seconds, "level": 0.0}
    assert faults["hit"] > 0  # connections refused or reset by the outage
    figures = report["figures"]
    assert figures["appends_acknowledged"] > 0
    assert figures["appends_failed"] + figures["appends_indeterminate"] + figures[
        "reads_failed"] > 0
    assert figures["appends_lost"] == figures["appends_duplicated"] == figures["appends_torn"] == 0
    assert figures["longest_unavailability"] > 0
    assert set(figures["append_latency"]) == {"count", "p50", "p90", "p99", "max"}
    assert report["worker_errors"] == []


@pytest.mark.slow
def test_a_server_restarted_empty_mid_run_is_an_anomaly() -> None:
    """The failure chatledger exists for: Redis comes back empty, acknowledged turns are gone."""
    with RedisServer() as server:
        restarted = threading.Event()
        stop = threading.Event()

        def restart_once_turns_are_acknowledged() -> None:
            # A log of 20 entries: two workers each waited for their earlier
            # appends' acknowledgements before sending the later ones.
            while not stop.wait(0.01):
                if _longest_log(server) >= 20:
                    server.restart(empty=True)
                    restarted.set()
                    return

        chaos = threading.Thread(target=restart_once_turns_are_acknowledged, daemon=True)
        chaos.start()
        try:
            result = run(server.url, *QUICK, "--no-faults", "--json")
        finally:
            stop.set()
            chaos.join()
    assert restarted.is_set(), "the run ended before the server was restarted"
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["faults"]["why_not"] == "--no-faults"
    assert {"lost", "ledger_changed"} & set(report["counts"]), report["counts"]
    assert report["anomalies"][0]["operations"]  # each names the operations that show it


def _longest_log(server: RedisServer) -> int:
    _, keys = server.command("SCAN", "0", "MATCH", "chatledger:*:log", "COUNT", "1000")
    assert isinstance(keys, list)
    return max((int(server.command("LLEN", key)) for key in keys), default=0)


def test_a_down_server_is_exit_2_with_the_password_hidden() -> None:
    url = f"redis://ops:s3cret@127.0.0.1:{free_port()}/0"
    result = run(url, "--deadline", "0.3", *QUICK)
    assert result.exit_code == 2, result.output
    assert "gave up on redis://ops:***@127.0.0.1:" in result.stderr
    assert "s3cret" not in result.output


def test_memory_runs_in_threads_without_faults_and_purges_its_namespace() -> None:
    url = "memory://verify-test"
    result = run(url, "--duration", "0.3", "--processes", "2", "--seed", "7")
    assert result.exit_code == 0, result.output
    assert "faults: none (memory:// lives in one process" in result.stdout
    assert ", seed 7" in result.stdout
    with open_store(url, namespace=namespace_of(result)) as store:
        assert list(store.sessions()) == []  # purged at the end


def test_the_url_s_namespace_gives_way_to_the_scratch_one() -> None:
    result = run("memory://?namespace=bot&timeout=5", "--duration", "0.2", "--processes", "1")
    assert result.exit_code == 0, result.output
    assert namespace_of(result).startswith("bot-verify-")


def test_a_worker_that_stops_makes_the_run_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("no conversation for you")

    monkeypatch.setattr(verify_module._Conversations, "session", broken)
    result = run("memory://", "--duration", "0.2", "--processes", "2")
    assert result.exit_code == 1
    assert "worker 0 stopped: RuntimeError: no conversation for you" in result.stdout
    assert "FAILED: 2 worker(s) stopped before the end: the run proves nothing" in result.stdout


def test_local_without_redis_server_cannot_run(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no redis-server there
    result = run("--local", *QUICK)
    assert result.exit_code == 2
    assert "--local could not start redis-server: 'redis-server' was not found" in result.output


@pytest.mark.parametrize(("args", "complaint"), [
    (["memory://", "--local"], "give a URL or --local, not both"),
    (["--duration", "0"], "--duration"),
    (["--duration", "601"], "--duration"),
    (["--processes", "0"], "--processes"),
])
def test_bad_options_are_usage_errors(args: list[str], complaint: str) -> None:
    result = run(*args)
    assert result.exit_code == 2 and complaint in result.output


def test_the_fault_plan_is_the_seed_s_and_fits_the_duration() -> None:
    assert plan(11, 30.0) == plan(11, 30.0) != plan(12, 30.0)
    faults = plan(11, 30.0)
    assert {fault.kind for fault in faults} <= set(KINDS) and len(faults) > 5
    for earlier, later in itertools.pairwise(faults):
        assert earlier.at + earlier.seconds < later.at  # cleared before the next
    assert faults[-1].at + faults[-1].seconds <= 30.0
    assert all(fault.describe().startswith(f"t={fault.at:.2f}s {fault.kind} for ")
               for fault in faults)


@pytest.mark.parametrize(("url", "netloc", "expected"), [
    ("redis://u:p@db.internal:6380/2?timeout=3", "127.0.0.1:5000",
     "redis://u:p@127.0.0.1:5000/2?timeout=3"),
    ("redis://db.internal", "127.0.0.1:5000", "redis://127.0.0.1:5000"),
])
def test_workers_reach_the_server_through_the_proxy(url: str, netloc: str,
                                                    expected: str) -> None:
    assert verify_module._through(url, netloc) == expected


def test_the_run_sets_the_namespace_and_the_workers_timeout_itself() -> None:
    strip = verify_module._without
    assert strip("redis://h/0?namespace=bot&timeout=3", "namespace") == "redis://h/0?timeout=3"
    assert strip("redis://h/0?namespace=bot", "namespace") == "redis://h/0"
    assert strip("redis://h/0?timeout=3", "timeout") == "redis://h/0"


def test_the_player_injects_from_the_first_connection_and_stops_at_once() -> None:
    faults = (Fault("lost replies", 0.0, 30.0), Fault("outage", 60.0, 1.0))
    with RedisServer() as server, FaultProxy(server.host, server.port) as proxy:
        idle = FaultPlayer(proxy, faults)
        idle.start()
        idle.stop()  # before any traffic: nothing was injected
        assert idle.played == [] and proxy.faults_injected == 0
        player = FaultPlayer(proxy, faults)
        player.start()
        for _ in range(200):  # each PING's reply is lost while the fault is re-armed
            _ping(proxy)
            if proxy.faults_injected >= 2:
                break
        player.stop()  # in the middle of its plan
        assert player.played == [faults[0]] and proxy.faults_injected >= 2
        assert _ping(proxy) == b"+PONG\r\n"  # cleared: traffic flows again
    FaultPlayer(proxy, faults).stop()  # never started: nothing to wait for


def _ping(proxy: FaultProxy) -> bytes:
    with socket.create_connection((proxy.host, proxy.port), timeout=5) as link:
        link.sendall(b"PING\r\n")
        try:
            return link.recv(64)
        except ConnectionResetError:
            return b""


def test_the_report_for_people_lists_faults_anomalies_and_the_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    recorder = Recorder()
    recorder.record_append("s", [user("hi", id="m1")], start=0.0, end=0.1,
                           ack=Ack(first_seq=1, last_seq=1, version=1, deduplicated=False,
                                   ledger="L1"))
    report = check_history(recorder.records, {"s": []})  # the final read found it gone
    outcome = Verification(
        "redis://127.0.0.1:1/0", "default-verify-x", 3, 2, 2.0, None, plan(3, 5.0)[:2], 7,
        ConcurrentRun((), (), 2), report, kept=True)
    cli_verify._show(outcome)
    shown = capsys.readouterr().out
    assert "faults: 2 injected, which hit the traffic 7 times" in shown
    assert f"  {plan(3, 5.0)[0].describe()}" in shown
    assert "history check: 1 anomalies (ledger_changed 1)" in shown
    assert "    final read (all) saw version 0" in shown  # the operations that show it
    assert "kept: the sessions verify-<slot>-<n> of namespace 'default-verify-x'" in shown
    assert shown.rstrip().endswith("FAILED: this deployment broke a promise (ledger_changed 1)")


def test_a_purge_that_fails_is_said_and_does_not_hide_the_report(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://ops:s3cret@127.0.0.1:{free_port()}/0"
    with open_store(url, timeout=0.2, retry=RetryPolicy.none()) as store:
        said = verify_module._purge(store)
    assert said is not None
    assert "could not purge namespace 'default'" in said and "s3cret" not in said
