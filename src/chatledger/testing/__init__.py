"""Testing toolkit for chatledger: real fault injection and private Redis servers for tests.

Only the standard library and a ``redis-server`` binary are needed: nothing here
imports the optional redis-py driver.
"""

from .cluster import RedisCluster
from .proxy import FaultProxy
from .redis_server import CommandArg, RedisCommandError, RedisServer, RespReply, free_port
from .sentinel import SentinelGroup, SentinelServer

__all__ = [
    "CommandArg",
    "FaultProxy",
    "RedisCluster",
    "RedisCommandError",
    "RedisServer",
    "RespReply",
    "SentinelGroup",
    "SentinelServer",
    "free_port",
]
