"""The Redis permissions chatledger needs, and a check that names a missing one (no I/O).

``ACL_RULES`` is the ACL enough for one namespace (the Security page gives the
whole ``ACL SETUSER`` line). The check runs one script that asks the server,
through ``redis.acl_check_cmd`` (Redis 7+), whether this connection's user may
run each command chatledger sends, on a key of the namespace: the commands the
scripts run inside count too, so a missing one is named before an append fails
with a script error that does not name it.
"""

from __future__ import annotations

from typing import Any

from ..._checks import Check
from .keys import SessionKeys, meta_pattern
from .scripts import APPEND

__all__ = ["ACL_COMMANDS", "PROBE", "acl_rules", "can_probe", "permission_check", "probe_args"]

# Each command as the ACL names it, and its arguments for the probe (K: a key
# of the namespace). WAIT and WAITAOF are needed only with wait_replicas.
_PROBES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("eval", ("eval", "return 1", "0")),
    ("evalsha", ("evalsha", APPEND.sha, "0")),
    ("script|load", ("script", "load", "return 1")),
    ("script|exists", ("script", "exists", APPEND.sha)),
    ("scan", ("scan", "0")),
    ("ping", ("ping",)),
    ("info", ("info",)),
    ("config|get", ("config", "get", "save")),
    *((name, (name, "K")) for name in ("del", "exists", "hlen", "llen", "persist", "pttl",
                                        "unlink")),
    ("hdel", ("hdel", "K", "f")),
    ("hmget", ("hmget", "K", "f")),
    ("hset", ("hset", "K", "f", "v")),
    ("lrange", ("lrange", "K", "0", "-1")),
    ("lset", ("lset", "K", "0", "v")),
    ("ltrim", ("ltrim", "K", "0", "-1")),
    ("pexpire", ("pexpire", "K", "1000")),
    ("rpush", ("rpush", "K", "v")),
    # The user index (forget_user): a SET per user.
    ("sadd", ("sadd", "K", "v")),
    ("smembers", ("smembers", "K")),
    ("srem", ("srem", "K", "v")),
)
ACL_COMMANDS = tuple(name for name, _ in _PROBES)

# ARGV: for each command, its word count then its words; the reply: the
# 1-based positions of the commands the user may not run.
PROBE = """
local denied, i, n = {}, 1, 0
while i <= #ARGV do
  n = n + 1
  local count, words = tonumber(ARGV[i]), {}
  for j = 1, count do words[j] = ARGV[i + j] end
  if not redis.acl_check_cmd(unpack(words)) then denied[#denied + 1] = n end
  i = i + count + 1
end
return denied
"""


def acl_rules(namespace: str) -> str:
    """The rules of an ACL user enough for ``namespace``: its keys, our commands."""
    pattern = meta_pattern(namespace, "", every_key=True).decode()
    commands = " ".join(f"+{name}" for name in ACL_COMMANDS)
    return f"resetkeys ~{pattern} resetchannels -@all {commands}"


def can_probe(info: dict[str, Any]) -> bool:
    """Whether the server (its INFO) has redis.acl_check_cmd: Redis 7 or later."""
    major = str(info.get("redis_version", "")).split(".", maxsplit=1)[0]
    return major.isdigit() and int(major) >= 7


def probe_args(namespace: str) -> list[str]:
    key = SessionKeys.of(namespace, "doctor-permissions").meta.decode()
    args: list[str] = []
    for _, words in _PROBES:
        args += [str(len(words)), *(key if word == "K" else word for word in words)]
    return args


def permission_check(denied: list[int] | None, error: str | None = None) -> Check:
    """The finding: ``denied`` positions from PROBE, None where it could not run."""
    if error is not None:
        return Check("permissions", "fail", f"the permission probe was refused: {error}")
    if denied is None:
        return Check("permissions", "info", "not checked: Redis 7 or later tells a user's "
                     "permissions (redis.acl_check_cmd)")
    if not denied:
        return Check("permissions", "ok", f"every command chatledger sends is allowed "
                     f"({len(ACL_COMMANDS)} checked)")
    missing = [ACL_COMMANDS[position - 1] for position in denied]
    return Check("permissions", "fail", "this user may not run " + ", ".join(missing)
                 + ": add " + " ".join(f"+{name}" for name in missing) + " to its ACL",
                 missing)
