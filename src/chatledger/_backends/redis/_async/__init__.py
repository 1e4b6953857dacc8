"""The asynchronous source of the Redis backends; :mod:`.._sync` is generated
from it by ``scripts/unasync.py``."""
