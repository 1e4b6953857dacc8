"""The agent's tools: LangChain tools over one ticketing service."""

from __future__ import annotations

from langchain_core.tools import BaseTool, StructuredTool

from .tickets import TicketingService


def make_tools(service: TicketingService) -> list[BaseTool]:
    """The five tools the model may call, bound to ``service``."""
    return [
        StructuredTool.from_function(service.lookup_order, name="lookup_order",
                                     description="Find an order by its number."),
        StructuredTool.from_function(service.check_shipment, name="check_shipment",
                                     description="Where an order's parcel is and when it "
                                                 "arrives."),
        StructuredTool.from_function(service.issue_refund, name="issue_refund",
                                     description="Refund an order to the customer's card."),
        StructuredTool.from_function(service.ship_replacement, name="ship_replacement",
                                     description="Send a replacement for a damaged item."),
        StructuredTool.from_function(service.create_ticket, name="create_ticket",
                                     description="Open a ticket for a human to follow up."),
    ]
