"""No secret leaves: every command's output and error, and every log line, on
success and on failure, is free of the URL's password and of the key material."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from chatledger import ConfigError, Keyring, open_store, user
from chatledger._cli import main
from chatledger.testing import RedisServer, free_port

PASSWORD = "Zulu9Quebec7"
# Fixed keys: the test ids must be the same in every xdist worker.
KEY, OTHER_KEY = bytes(range(32)), bytes(range(100, 132))
KEYRING = f"k1={base64.b64encode(KEY).decode()}"
WRONG_KEYRING = f"k1={base64.b64encode(OTHER_KEY).decode()}"
COMMANDS = [["sessions"], ["show", "s"], ["export"], ["import", "-"], ["delete", "x", "--yes"],
            ["purge", "--prefix", "nothing-", "--yes"], ["doctor"]]


def secrets() -> list[str]:
    """Every form a secret could take in text."""
    forms = [PASSWORD]
    for key in (KEY, OTHER_KEY):
        encoded = base64.b64encode(key).decode()
        # A part of the key is a secret too: its base64 without the padding, any
        # 16 characters of it (96 bits).
        forms += [encoded.rstrip("="), encoded[8:24], encoded[24:40], key.hex()[:24],
                  repr(key)[2:-1][:24]]
    return forms


def assert_clean(result: Result, caplog: pytest.LogCaptureFixture) -> None:
    text = result.output + caplog.text + repr(result.exception)
    for secret in secrets():
        assert secret not in text, f"a secret leaked in: {text[:500]}"
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer(extra_args=["--user", "ops", "on", f">{PASSWORD}", "~*", "&*",
                                 "+@all"]) as running:
        yield running


@pytest.fixture
def url(server: RedisServer) -> str:
    return f"redis://ops:{PASSWORD}@127.0.0.1:{server.port}/0"


def run(args: list[str], keyring: str | None) -> Result:
    env = {"CHATLEDGER_KEYRING": keyring} if keyring else {"CHATLEDGER_KEYRING": ""}
    return CliRunner().invoke(main, args, input="", env=env)


@pytest.fixture(autouse=True)
def every_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


def write(url: str) -> None:
    with open_store(url, namespace="leak", encryption=Keyring({"k1": KEY}, current="k1")) as store:
        store.session("s").append([user("my card is 4111 1111 1111 1234")])


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_commands_that_succeed_show_no_secret(
    url: str, command: list[str], caplog: pytest.LogCaptureFixture,
) -> None:
    write(url)
    result = run([*command, "--url", url, "--namespace", "leak"], KEYRING)
    assert result.exit_code in (0, 1), result.output  # doctor may find a warning
    assert_clean(result, caplog)
    if command[0] in ("show", "export"):
        assert "4111 1111 1111 1234" in result.output  # decrypted with the keyring


@pytest.mark.parametrize("command", [["show", "s"], ["export"]], ids=lambda c: c[0])
@pytest.mark.parametrize("keyring", [WRONG_KEYRING, None], ids=["wrong-key", "no-key"])
def test_a_wrong_or_missing_key_is_named_without_any_key(
    url: str, command: list[str], keyring: str | None, caplog: pytest.LogCaptureFixture,
) -> None:
    write(url)
    result = run([*command, "--url", url, "--namespace", "leak"], keyring)
    # show: the sealed message in its place (exit 3); export: stops there (exit 1)
    assert result.exit_code == (3 if command[0] == "show" else 1), result.output
    assert "stored entry seq=1 cannot be opened" in result.output
    assert "key id 'k1'" in result.output
    assert "4111" not in result.output
    assert_clean(result, caplog)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_down_server_shows_no_secret(command: list[str],
                                       caplog: pytest.LogCaptureFixture) -> None:
    down = f"redis://ops:{PASSWORD}@127.0.0.1:{free_port()}/0"
    result = run([*command, "--url", down, "--deadline", "0.2"], KEYRING)
    assert result.exit_code == 2, result.output
    assert "ops:***@" in result.output
    assert_clean(result, caplog)


@pytest.mark.parametrize("url", [
    f"redis://ops:{PASSWORD}@127.0.0.1:1/0?colour=red",
    f"redis://:{PASSWORD}@Lima2?{PASSWORD}@127.0.0.1:1/0",
    f"redis://:{PASSWORD}@Lima2/{PASSWORD}@127.0.0.1:1/0",
    f"redis://ops:{PASSWORD}@127.0.0.1:notaport/0",
])
def test_a_bad_url_shows_no_secret(url: str, caplog: pytest.LogCaptureFixture) -> None:
    result = run(["sessions", "--url", url], KEYRING)
    assert result.exit_code == 2 and "ConfigError" in result.output
    assert_clean(result, caplog)
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    assert PASSWORD not in str(caught.value) and PASSWORD not in repr(caught.value)


@pytest.mark.parametrize("keyring", [
    f"k1={base64.b64encode(KEY).decode()[:-4]}",    # cut short: not 32 bytes
    f"k1={base64.b64encode(KEY).decode()}!",        # not base64
    f"k1={base64.b64encode(KEY).decode()},k1={base64.b64encode(OTHER_KEY).decode()}",
    base64.b64encode(KEY).decode(),                  # no id
    f"k1:{base64.b64encode(KEY).decode()}",          # a colon for the equals sign
    f"k1 {base64.b64encode(KEY).decode()}",
    f"{base64.b64encode(KEY).decode()}=k1",          # key and id swapped
    f"k1={base64.b64encode(KEY).decode()},{base64.b64encode(OTHER_KEY).decode()}",
], ids=["short", "not-base64", "id-twice", "no-id", "colon", "space", "swapped",
        "second-without-id"])
def test_a_bad_keyring_is_a_config_error_naming_no_key(
    url: str, keyring: str, caplog: pytest.LogCaptureFixture,
) -> None:
    result = run(["sessions", "--url", url], keyring)
    assert result.exit_code == 2 and "ConfigError" in result.output, result.output
    assert_clean(result, caplog)


def test_a_store_and_its_keyring_print_no_secret(url: str) -> None:
    keyring = Keyring({"k1": KEY}, current="k1")
    with open_store(url, encryption=keyring) as store:
        shown = " ".join((repr(store), str(store.url), repr(store.options), repr(keyring)))
    for secret in secrets():
        assert secret not in shown
