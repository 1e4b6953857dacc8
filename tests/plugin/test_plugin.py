"""The pytest plugin, run the way a user runs it: a pytest run of its own (pytester),
loading the plugin through its entry point. One test runs it in a new interpreter, as
a user's shell does; the others run it in this process, which proves the same plugin
code in a fraction of the time (no interpreter start, no second import of LangChain)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest

# LangSmith's plugin is unused and slow to import (in every xdist worker of a run).
_QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:langsmith_plugin")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*_QUIET, *args)


def test_ledger_store_runs_on_memory_and_sqlite_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from chatledger import assistant, open_store, user

        def test_memory(ledger_store, ledger_url):
            ledger_store.session("a").append([user("hi"), assistant("hello")])
            with open_store(ledger_url) as same:  # code under test reaches the same store
                assert [m.text for m in same.session("a").read()] == ["hi", "hello"]
            assert ledger_store.namespace.startswith("pytest-")
    """)
    result = pytester.runpytest_subprocess(*_QUIET, "-v")  # a new interpreter, as a shell
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_memory?memory? PASSED*", "*test_memory?sqlite? PASSED*"])


def test_the_word_postgres_starts_a_private_server_with_its_schema(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from chatledger import user

        def test_it(ledger_store):
            assert ledger_store.url.startswith("postgresql://postgres@127.0.0.1:")
            assert ledger_store.session("s").append([user("hi")]).version == 1
    """)
    result = _run(pytester, "-v", "--chatledger-url", "postgres")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_it?postgres? PASSED*"])


def test_the_word_dynamodb_starts_a_private_emulator_with_its_table(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from chatledger import user

        def test_it(ledger_store):
            assert ledger_store.url.startswith("dynamodb://chatledger-pytest?")
            assert ledger_store.session("s").append([user("hi")]).version == 1
    """)
    result = _run(pytester, "-v", "--chatledger-url", "dynamodb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_it?dynamodb? PASSED*"])


def test_a_tests_marker_keeps_what_its_module_marker_gives(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        pytestmark = pytest.mark.chatledger(urls=["sqlite://"], options={"timeout": 3.0})

        @pytest.mark.chatledger(ttl=60, options={"max_message_bytes": 4096})
        def test_with_its_own_ttl(ledger_store):
            assert ledger_store.url.startswith("sqlite://")  # the module's, not memory://
            assert ledger_store.options.ttl == 60
            assert (ledger_store.options.timeout, ledger_store.options.max_message_bytes) == (
                3.0, 4096)
    """)
    result = _run(pytester, "-v", "--chatledger-url", "memory://")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_with_its_own_ttl?sqlite? PASSED*"])


def test_urls_come_from_the_command_line_the_ini_file_or_a_marker(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nchatledger_urls =\n    memory://\n")
    pytester.makepyfile("""
        import pytest

        def test_from_config(ledger_store):
            assert ledger_store.url.startswith("redis://127.0.0.1:")  # --chatledger-url redis

        @pytest.mark.chatledger(urls=["memory://"], ttl=60)
        def test_from_marker(ledger_store):
            assert ledger_store.url.startswith("memory://")
            assert ledger_store.options.ttl == 60
    """)
    _run(pytester, "--chatledger-url", "redis").assert_outcomes(passed=2)
    ini_only = _run(pytester, "-v", "-k", "from_config")
    ini_only.assert_outcomes(failed=1)  # the ini says memory://, the test wants redis
    ini_only.stdout.fnmatch_lines(["*test_from_config?memory? FAILED*"])


def test_each_test_is_purged_even_when_it_fails(pytester: pytest.Pytester,
                                                tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    pytester.makepyfile("""
        from chatledger import user

        def test_fails(ledger_store):
            ledger_store.session("kept?").append([user("x")])
            assert False, "boom"

        def test_passes(ledger_store, ledger_session):
            ledger_session.append([user("y")])
            assert ledger_store.session("kept?").info() is None  # another test's namespace
    """)
    result = _run(pytester, f"--chatledger-url=sqlite:///{database}")
    result.assert_outcomes(passed=1, failed=1)
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 0


def test_namespaces_are_unique_per_xdist_worker(pytester: pytest.Pytester,
                                                tmp_path: Path) -> None:
    log = tmp_path / "namespaces.txt"
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.parametrize("n", range(6))
        def test_writes(ledger_store, n):
            with open({str(log)!r}, "a") as out:
                out.write(ledger_store.namespace + "\\n")
    """)
    _run(pytester, "-n", "2", "--chatledger-url=memory://").assert_outcomes(passed=6)
    namespaces = log.read_text().split()
    assert len(namespaces) == len(set(namespaces)) == 6
    assert {name.split("-")[1] for name in namespaces} == {"gw0", "gw1"}


def test_seed_session_takes_lists_and_json_jsonl_yaml_files(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", transcript='[{"role": "user", "content": "hi"},'
                                          ' {"role": "assistant", "content": "hello"}]')
    pytester.makefile(".jsonl", transcript='{"session": "s", "seq": 1, "role": "user", '
                                           '"content": "hi", "created_at": '
                                           '"2026-01-02T03:04:05+00:00"}\n')
    pytester.makefile(".yaml", transcript="- role: system\n  content: be kind\n"
                                          "- role: user\n  content: hi\n")
    pytester.makefile(".txt", transcript="nope")
    pytester.makepyfile("""
        import pytest
        from chatledger import user

        @pytest.mark.chatledger(urls=["memory://"])
        @pytest.mark.parametrize(("source", "count"), [
            ("transcript.json", 2), ("transcript.jsonl", 1), ("transcript.yaml", 2)])
        def test_files(seed_session, source, count):
            session, version = seed_session(source, session_id="customer")
            assert version == count == len(session.read())
            assert session.id == "customer"

        @pytest.mark.chatledger(urls=["memory://"])
        def test_list(seed_session):
            session, version = seed_session([user("a"), {"role": "assistant", "content": "b"}])
            assert [m.text for m in session.read()] == ["a", "b"] and version == 2

        @pytest.mark.chatledger(urls=["memory://"])
        @pytest.mark.parametrize(("bad", "message"), [
            ("transcript.txt", "is .json, .jsonl, .yaml or .yml"),
            ([{"role": "user", "content": "x", "colour": "red"}], "unknown field 'colour'"),
            ([42], "expected a message record")])
        def test_bad(seed_session, bad, message):
            with pytest.raises(ValueError, match=message):
                seed_session(bad)
    """)
    _run(pytester).assert_outcomes(passed=7)


def test_ledger_faults_read_like_sentences(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from chatledger import BackendUnavailable, MemoryLostError, user

        def test_outage_then_recovery(ledger_store, ledger_faults, ledger_probe):
            session = ledger_store.session("s")
            ack = session.append([user("my order is 123")])
            with ledger_faults.outage():
                with pytest.raises(BackendUnavailable):
                    session.read(min_version=ack.version)
            assert len(session.read(min_version=ack.version)) == 1
            assert ledger_probe.errors["BackendUnavailable"] == 1 and ledger_probe.retries > 0

        def test_a_lost_reply_is_retried_once(ledger_store, ledger_faults, ledger_probe):
            session = ledger_store.session("s")
            session.append([user("first")])  # connected, script loaded: next is the append
            ledger_faults.lose_next_reply()
            assert session.append([user("once")]).deduplicated
            assert len(session.read()) == 2 and ledger_probe.deduplicated == 1

        def test_restart_empty_is_loud_with_min_version(ledger_store, ledger_faults):
            session = ledger_store.session("s")
            ack = session.append([user("remember me")])
            ledger_faults.restart(empty=True)
            with pytest.raises(MemoryLostError):
                session.read(min_version=ack.version, ledger=ack.ledger)

        def test_a_restart_that_keeps_its_data(ledger_store, ledger_faults):
            session = ledger_store.session("s")
            ack = session.append([user("remember me")])
            ledger_faults.restart(empty=False)
            assert session.read(min_version=ack.version, ledger=ack.ledger).version == 1
            ledger_faults.kill()  # what it held since is not saved: it comes back empty
            ledger_faults.restart(empty=False)  # (not with the snapshot saved above)
            assert session.read().version == 0

        def test_slow_paused_and_flaky(ledger_store, ledger_faults):
            session = ledger_store.session("s")
            with ledger_faults.latency(ms=20):
                session.append([user("slow")])
            with ledger_faults.reset_connections(every=10):
                for n in range(5):
                    session.append([user(f"flaky {n}")])
            with ledger_faults.pause(), pytest.raises(BackendUnavailable):
                session.read()
            with ledger_faults.drip(byte_every=0.001):
                assert len(session.read(last=1)) == 1
            assert session.read().version == 6

        def test_the_url_carries_the_fast_failure_options(ledger_url, ledger_faults):
            from chatledger import open_store
            with open_store(ledger_url) as app:
                assert (app.options.timeout, app.options.retry.deadline) == (0.5, 2.0)

        def test_killed(ledger_store, ledger_faults):
            ledger_faults.kill()
            with pytest.raises(BackendUnavailable):
                ledger_store.session("s").read()
            with pytest.raises(ValueError, match="every"):
                with ledger_faults.reset_connections(every=0):
                    pass
    """)
    _run(pytester, "-v").assert_outcomes(passed=7)


def test_the_probe_explains_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from chatledger import InvalidMessage, user

        @pytest.mark.chatledger(urls=["memory://"])
        def test_errors_are_listed(ledger_store, ledger_probe):
            with pytest.raises(InvalidMessage):
                ledger_store.session("s").append([user("\\ud800")])
            ledger_probe.assert_no_errors()

        @pytest.mark.chatledger(urls=["memory://"])
        def test_forgetting_is_caught(ledger_store, ledger_probe):
            session = ledger_store.session("s")
            session.append([user("hi")])
            ledger_store._backend._sessions.clear()  # memory lost behind the store's back
            assert session.read().version == 0
            ledger_probe.assert_no_silent_empty_reads()

        @pytest.mark.chatledger(urls=["memory://"])
        def test_deliberate_deletes_are_fine(ledger_store, ledger_probe):
            session = ledger_store.session("s")
            session.append([user("hi")])
            session.delete()
            assert session.read().version == 0 and session.info() is None
            ledger_store.session("t").append([user("x")])
            ledger_store.purge(prefix="t")
            assert ledger_store.session("t").read().version == 0
            ledger_probe.assert_no_silent_empty_reads()
            ledger_probe.assert_no_errors()
            assert ledger_probe.counts["read"] == 2 and set(ledger_probe.latency_ms()) == {
                "p50", "p90", "p99", "max"}
    """)
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*store calls failed:*", "*append 's': InvalidMessage: messages?0?.content*",
        "*chatledger probe*", "*store calls: append 1, read 1*",
        "*silent empty read: read of session 's'*returned version 0, but version 1*"])


def test_async_ledger_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import asyncio
        from chatledger import user

        def test_async(async_ledger_store):
            async def conversation():
                session = async_ledger_store.session("s")
                await session.append([user("hi")])
                return (await session.read()).version
            assert asyncio.run(conversation()) == 1
    """)
    # PostgreSQL: the fixture opens the store in a loop of its own; the pool once died
    # with it, and every call of the test's loop timed out.
    _run(pytester, "--chatledger-url=memory://", "--chatledger-url=redis",
         "--chatledger-url=postgres", "--chatledger-ttl=30").assert_outcomes(passed=3)


def test_the_probe_sees_stores_opened_on_ledger_url_as_the_same_store(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from chatledger import open_store, user

        @pytest.mark.chatledger(urls=["sqlite://"])
        def test_amnesia_seen_through_the_apps_own_store(ledger_store, ledger_url, ledger_probe):
            ledger_store.session("dana").append([user("hi")])
            with open_store(ledger_url) as app:  # the agent's own store on the same data
                app._backend.purge("")  # memory lost behind every store's back
                assert app.session("dana").read().version == 0
            ledger_probe.assert_no_silent_empty_reads()

        @pytest.mark.chatledger(urls=["sqlite://"])
        def test_a_deliberate_delete_by_the_app_is_fine(ledger_store, ledger_url, ledger_probe):
            ledger_store.session("c").append([user("x")])
            with open_store(ledger_url) as app:
                app.session("c").delete()
            assert ledger_store.session("c").read().version == 0
            ledger_probe.assert_no_silent_empty_reads()
    """)
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*silent empty read: read of session 'dana'*"])


@pytest.mark.parametrize(("marker", "arguments", "said"), [
    ("ttl=60", ["--chatledger-url=sqlite:///t.db?ttl=5"],
     "@pytest.mark.chatledger(ttl=...) on test_twice.py::test_it and ?ttl= in "
     "'sqlite:///t.db?ttl=5': give the ttl once"),
    ('urls=["sqlite:///t.db?ttl=5"]', ["--chatledger-ttl=10"],
     "the plugin's ttl (--chatledger-ttl or the ini's chatledger_ttl) and ?ttl= in "
     "'sqlite:///t.db?ttl=5': give the ttl once"),
], ids=["marker-and-url", "plugin-and-marker-url"])
def test_a_ttl_given_twice_for_a_test_is_one_usage_error_before_any_test(
        pytester: pytest.Pytester, marker: str, arguments: list[str], said: str) -> None:
    pytester.makepyfile(test_twice=f"""
        import pytest

        @pytest.mark.chatledger({marker})
        def test_it(ledger_store):
            pass
    """)
    result = _run(pytester, *arguments)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [f"ERROR: chatledger: {said}"], errors


_ACCEPTED_ARGUMENTS = "accepted: urls=[URL, ...], ttl=SECONDS, options={...}"


@pytest.mark.parametrize(("marker", "said"), [
    ('url=["redis"]', "unknown argument url= (did you mean urls=?); " + _ACCEPTED_ARGUMENTS),
    ("tll=60", "unknown argument tll= (did you mean ttl=?); " + _ACCEPTED_ARGUMENTS),
    ('"redis"', "takes keywords only, got 'redis' (did you mean urls=['redis']?); "
                + _ACCEPTED_ARGUMENTS),
    ('urls="sqlite://"', "urls='sqlite://' is not a list; accepted: a list of URLs, "
                         "e.g. urls=['sqlite://']"),
    ('urls=["redis://h/0", "mem://"]', "urls=: unknown scheme 'mem' in 'mem://'; accepted: "
                                       "'redis', 'postgres' or 'dynamodb' (a private server) "
                                       "or a URL of scheme dynamodb, memory, postgres, "
                                       "postgresql, redis, "),
    ("ttl='an hour'", "ttl='an hour' is not seconds; accepted: a number above 0, e.g. 3600"),
    ("options=1", "options=1 is not a dict"),
], ids=["url", "tll", "positional", "string", "scheme", "ttl", "options"])
def test_a_mistake_in_the_marker_is_one_usage_error_before_any_test(
        pytester: pytest.Pytester, marker: str, said: str) -> None:
    pytester.makepyfile(test_marked=f"""
        import pytest

        @pytest.mark.chatledger({marker})
        def test_it(ledger_store):
            pass

        def test_other():
            pass
    """)
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(
        "ERROR: chatledger: @pytest.mark.chatledger on test_marked.py::test_it"), errors
    assert said in errors[0]
    assert "passed" not in result.stdout.str() and "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("option", "said"), [
    ("--chatledger-url=redi", "--chatledger-url: store URL 'redi' has no scheme"),
    ("--chatledger-url=redis-cluster://h:1", "--chatledger-url: unknown scheme "
                                             "'redis-cluster' in 'redis-cluster://h:1'"),
    ("--chatledger-ttl=1h", "--chatledger-ttl or the ini's chatledger_ttl: ttl='1h' is not "
                            "seconds; accepted: a number above 0, e.g. 3600"),
    # Past the check, each would fail every test twice (setup and teardown).
    ("--chatledger-ttl=-5", "--chatledger-ttl or the ini's chatledger_ttl: ttl='-5' is not "
                            "seconds; accepted: a number above 0"),
    ("--chatledger-ttl=nan", "--chatledger-ttl or the ini's chatledger_ttl: ttl='nan' is not "
                             "seconds"),
    ("--chatledger-ttl=0", "--chatledger-ttl or the ini's chatledger_ttl: ttl='0' is not "
                           "seconds"),
    ("--chatledger-url=sqlite:///t.db?namespace=staging",
     "--chatledger-url: 'sqlite:///t.db?namespace=staging' names a namespace; each test runs "
     "in a namespace of its own: drop ?namespace="),
], ids=["no-scheme", "scheme", "ttl", "negative", "nan", "zero", "namespace"])
def test_a_mistake_on_the_command_line_is_one_usage_error(
        pytester: pytest.Pytester, option: str, said: str) -> None:
    pytester.makepyfile("def test_it(ledger_store):\n    pass\n")
    result = _run(pytester, option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: chatledger: {said}"), errors
    if "url" in option and "namespace" not in option:
        assert errors[0].endswith("accepted: 'redis', 'postgres' or 'dynamodb' (a private "
                                  "server) or a URL of scheme dynamodb, memory, postgres, "
                                  "postgresql, redis, "
                                  "redis+cluster, redis+sentinel, rediss, rediss+cluster, "
                                  "sqlite, unix")


def test_a_ttl_given_in_the_url_and_to_the_plugin_is_one_usage_error(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_it(ledger_store):\n    pass\n")
    result = _run(pytester, "--chatledger-url=sqlite:///t.db?ttl=5", "--chatledger-ttl=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "and ?ttl= in 'sqlite:///t.db?ttl=5': give the ttl once" in result.stderr.str()
    alone = _run(pytester, "--chatledger-url=sqlite:///t.db?ttl=5")
    alone.assert_outcomes(passed=1)


def test_an_ini_url_is_checked_too_and_xdist_workers_say_a_marker_mistake(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nchatledger_urls =\n    sqlite:/x.db\n")
    pytester.makepyfile(test_marked="""
        import pytest

        @pytest.mark.chatledger(urls="memory://")
        def test_it(ledger_store):
            pass
    """)
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: chatledger: the ini's chatledger_urls: store URL 'sqlite:/x.db' needs " \
           "'//' after 'sqlite:'; did you mean 'sqlite:////x.db'?" in result.stderr.str()
    distributed = _run(pytester, "-n", "2", "--chatledger-url=memory://")
    distributed.stdout.fnmatch_lines([
        "*Interrupted: chatledger: @pytest.mark.chatledger on test_marked.py::test_it: "
        "urls='memory://' is not a list*"])
    assert "INTERNALERROR" not in distributed.stdout.str() + distributed.stderr.str()
    assert "passed" not in distributed.stdout.str()


def test_the_probe_summary_leads_a_failure_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probed="""
        import pytest
        from chatledger import InvalidMessage, user

        @pytest.mark.chatledger(urls=["memory://"])
        def test_fails(ledger_store, ledger_probe):
            with pytest.raises(InvalidMessage):
                ledger_store.session("s").append([user("\\ud800")])
            ledger_probe.assert_no_errors()
    """)
    for args in ((), ("-n", "2")):
        result = _run(pytester, "-ra", *args)
        result.assert_outcomes(failed=1)
        report = result.stdout.str()
        probe, summary, line = (report.index("chatledger probe"),
                                report.index("errors: InvalidMessage 1"),
                                report.index(">       ledger_probe.assert_no_errors()"))
        assert probe < summary < line, report
        assert "plugin/probe.py" not in report  # the failing line is the test's own
        if not args:
            result.stdout.fnmatch_lines(["FAILED *test_fails?memory? - AssertionError: store*"])
