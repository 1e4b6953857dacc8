"""What a Redis server says about the safety of the sessions it holds (no I/O).

The backends gather the answers (PING times, INFO, CONFIG, SCRIPT EXISTS);
these functions judge them for ``chatledger doctor``.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from ..._checks import Check
from .scripts import APPEND, DELETE, INFO, READ, TRIM

if TYPE_CHECKING:
    from .topology import Shard

__all__ = ["SCRIPTS", "cluster_checks", "server_checks"]

SCRIPTS = (APPEND, READ, INFO, TRIM, DELETE)
SLOTS = 16384


def server_checks(pings_ms: list[float], info: dict[str, Any], config: dict[str, Any] | None,
                  loaded: list[bool]) -> list[Check]:
    """Latency, version, eviction, persistence, replication and our scripts.

    ``config`` is None when the server refuses CONFIG (managed servers often do).
    """
    return [_latency(pings_ms), _version(info), _eviction(info), _persistence(info, config),
            _replication(info), _scripts(loaded)]


def _latency(pings_ms: list[float]) -> Check:
    median = statistics.median(pings_ms)
    return Check("latency", "ok", f"PING {median:.2f} ms (median of {len(pings_ms)})",
                 round(median, 3))


def _version(info: dict[str, Any]) -> Check:
    version = str(info.get("redis_version", "?"))
    mode = info.get("redis_mode", "standalone")
    major = int(version.split(".", maxsplit=1)[0]) if version[:1].isdigit() else 0
    if major < 6:
        return Check("version", "warn", f"Redis {version} ({mode}): 6.0 or later is supported",
                     version)
    return Check("version", "ok", f"Redis {version} ({mode})", version)


def _eviction(info: dict[str, Any]) -> Check:
    limit, policy = int(info.get("maxmemory", 0)), str(info.get("maxmemory_policy", "?"))
    value = {"maxmemory": limit, "maxmemory_policy": policy}
    if limit == 0:
        return Check("eviction", "ok", f"no maxmemory limit (policy {policy} never applies)",
                     value)
    where = f"maxmemory {limit:,} bytes, policy {policy}"
    if policy.startswith("allkeys-"):
        return Check("eviction", "warn", f"{where}: under memory pressure this server DELETES "
                     "ANY KEY, sessions included; set maxmemory-policy noeviction", value)
    if policy.startswith("volatile-"):
        return Check("eviction", "warn", f"{where}: sessions stored with a ttl carry an "
                     "expiry, so this server can evict them early; use noeviction", value)
    return Check("eviction", "ok", f"{where}: writes are refused when full, never evicted",
                 value)


def _persistence(info: dict[str, Any], config: dict[str, Any] | None) -> Check:
    aof = bool(info.get("aof_enabled", 0))
    if config is None:
        return Check("persistence", "info" if aof else "warn",
                     f"AOF {'on' if aof else 'off'}; RDB snapshots unknown (CONFIG refused)")
    rdb = bool(config.get("save"))
    value = {"aof": aof, "rdb": rdb}
    if not (aof or rdb):
        return Check("persistence", "warn", "no AOF and no RDB: a restart empties the server "
                     "and every session with it", value)
    kinds = [f"AOF (appendfsync {config.get('appendfsync')})"] if aof else []
    kinds += ["RDB snapshots"] if rdb else []
    return Check("persistence", "ok", " and ".join(kinds), value)


def _replication(info: dict[str, Any]) -> Check:
    role, replicas = str(info.get("role", "?")), int(info.get("connected_slaves", 0))
    value = {"role": role, "replicas": replicas}
    if role != "master":
        return Check("replication", "fail", f"this server is a {role}: it refuses writes; "
                     "point the URL at the master (or use redis+sentinel://)", value)
    if replicas == 0:
        return Check("replication", "info", "master with no replicas: losing this machine "
                     "loses what was not yet persisted", value)
    return Check("replication", "ok", f"master with {replicas} connected replica(s)", value)


def _scripts(loaded: list[bool]) -> Check:
    names = [script.name for script, ok in zip(SCRIPTS, loaded, strict=True) if not ok]
    if names:
        return Check("scripts", "info", f"not loaded yet: {', '.join(names)} "
                     "(loaded on first use)", len(SCRIPTS) - len(names))
    return Check("scripts", "ok", f"all {len(SCRIPTS)} chatledger scripts loaded",
                 len(SCRIPTS))


def cluster_checks(shards: list[Shard], state: dict[str, Any], wait_replicas: int) -> list[Check]:
    """The cluster's state and slots, and the replicas behind each primary.

    ``state`` is ``CLUSTER INFO`` from one node; ``shards`` the map the client holds.
    """
    return [_cluster_state(shards, state), _cluster_replicas(shards, wait_replicas)]


def _cluster_state(shards: list[Shard], state: dict[str, Any]) -> Check:
    health, covered = str(state.get("cluster_state", "?")), sum(s.slots for s in shards)
    value = {"cluster_state": health, "slots": covered, "primaries": len(shards)}
    detail = (f"cluster_state {health}, {covered} of {SLOTS} slots covered by {len(shards)} "
              "primaries")
    if health != "ok":
        return Check("cluster", "fail", f"{detail}: the cluster refuses calls", value)
    if covered < SLOTS:
        return Check("cluster", "warn", f"{detail}: sessions in the others are unreachable",
                     value)
    return Check("cluster", "ok", detail, value)


def _cluster_replicas(shards: list[Shard], wait_replicas: int) -> Check:
    counts = {f"{host}:{port}": len(shard.replicas) for shard in shards
              for host, port in [shard.primary]}
    detail = ", ".join(f"{name} has {count}" for name, count in counts.items())
    fewest = min(counts.values(), default=0)
    if wait_replicas > fewest:
        return Check("replicas", "warn", f"{detail}: wait_replicas={wait_replicas} cannot be met "
                     "where a primary has fewer, so every write there fails", counts)
    if fewest == 0:
        return Check("replicas", "warn", f"{detail}: a primary with no replica loses its "
                     "sessions with its machine, and nothing can take over its slots", counts)
    return Check("replicas", "ok", f"replicas per primary: {detail}", counts)
