"""The asynchronous source of the DynamoDB backend; :mod:`.._sync` is generated
from it by ``scripts/unasync.py``."""
