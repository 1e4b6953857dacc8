"""A stub ticketing service: orders, shipments, refunds, replacements, tickets.

It keeps its own state, as the real one would, so a test can check what the
agent did (a refund issued once, a ticket opened, every call made) beside what
it said.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Order:
    number: str
    item: str
    status: str  # "processing", "shipped", "delivered"
    carrier: str = "ParcelCo"
    eta: str = "Friday"


@dataclass
class TicketingService:
    orders: dict[str, Order] = field(default_factory=lambda: {
        "48213": Order("48213", "a blue kettle", "shipped"),
        "51007": Order("51007", "a desk lamp", "processing"),
        "39950": Order("39950", "running shoes", "delivered", eta="Monday"),
    })
    refunds: list[str] = field(default_factory=list)
    replacements: list[str] = field(default_factory=list)
    tickets: list[str] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (tool, argument), in order

    def lookup_order(self, order: str) -> dict[str, str]:
        self.calls.append(("lookup_order", order))
        found = self.orders.get(order)
        if found is None:
            return {"error": f"no order {order}"}
        return {"order": found.number, "item": found.item, "status": found.status}

    def check_shipment(self, order: str) -> dict[str, str]:
        self.calls.append(("check_shipment", order))
        found = self.orders.get(order)
        if found is None:
            return {"error": f"no order {order}"}
        if found.status == "processing":
            return {"order": order, "status": "not shipped yet"}
        return {"order": order, "carrier": found.carrier, "eta": found.eta,
                "status": found.status}

    def issue_refund(self, order: str) -> dict[str, str]:
        self.calls.append(("issue_refund", order))
        if order not in self.orders:
            return {"error": f"no order {order}"}
        if order not in self.refunds:  # a refund is issued once, however often asked
            self.refunds.append(order)
        return {"order": order, "refund": f"R-{order}", "days": "5"}

    def ship_replacement(self, order: str) -> dict[str, str]:
        self.calls.append(("ship_replacement", order))
        if order not in self.orders:
            return {"error": f"no order {order}"}
        self.replacements.append(order)
        return {"order": order, "replacement": f"X-{order}", "eta": "Tuesday"}

    def create_ticket(self, summary: str) -> dict[str, str]:
        self.calls.append(("create_ticket", summary))
        self.tickets.append(summary)
        return {"ticket": f"T-{len(self.tickets):04d}"}
