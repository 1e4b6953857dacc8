"""A customer-service agent whose memory lives in chatledger: the example the
pytest plugin is shown on (see ../README.md)."""

from .agent import MEMORY_UNAVAILABLE, SupportAgent
from .tickets import TicketingService

__all__ = ["MEMORY_UNAVAILABLE", "SupportAgent", "TicketingService"]
