"""docs/grafana-dashboard.json queries only metrics and labels that the store exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from chatledger import open_store, user

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"


def _queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_every_metric_and_label_of_the_dashboard_is_exported() -> None:
    registry = CollectorRegistry()
    with open_store("memory://", namespace="bot", prometheus=registry) as store:
        store.session("s").append([user("hi")])
    exported = generate_latest(registry).decode()
    names = set(re.findall(r"^# TYPE (\w+) ", exported, re.M))
    series = set(re.findall(r"^(chatledger_\w+)\{", exported, re.M))
    labels = set(re.findall(r'[{,](\w+)="', exported))
    queries = _queries()
    assert len(queries) == 9
    for query in queries:
        for metric in re.findall(r"chatledger_\w+", query):
            assert metric in series or metric in names, (metric, query)
        for label in re.findall(r"by \(([^)]*)\)", query):
            assert {part.strip() for part in label.split(",")} - {"le"} <= labels, query
        assert set(re.findall(r"(\w+)[=!]~", query)) <= labels, query
