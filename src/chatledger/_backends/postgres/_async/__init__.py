"""The asynchronous source of the PostgreSQL backend; :mod:`.._sync` is generated
from it by ``scripts/unasync.py``."""
