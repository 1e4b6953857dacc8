"""The asynchronous source of the memory:// backend; :mod:`.._sync` is generated
from it by ``scripts/unasync.py``."""
