"""The Grafana dashboard in docker/grafana: Grafana's JSON model, every query on a metric a worker exports,
every metric of a worker on it, and its provisioning wired to the compose services that serve it."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

import replicator.worker.metrics  # noqa: F401 - registers the worker's metrics
from tests.compose_checks import REPO, bind_mounts, load_compose, services

DASHBOARD = REPO / "docker" / "grafana" / "dashboards" / "mirrorflow.json"
PROVISIONING = REPO / "docker" / "grafana" / "provisioning"
METRIC = re.compile(r"\bmirrorflow_[a-z_]+")


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def queries(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def exported() -> dict[str, str]:
    """Each series name a worker's /metrics can show -> the metric (family) it belongs to."""
    out = {}
    for family in REGISTRY.collect():
        if not family.name.startswith("mirrorflow_"):
            continue
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"], "gauge": [""]}[family.type]
        out.update({family.name + suffix: family.name for suffix in suffixes})
    return out


def test_the_dashboard_is_grafanas_json_model(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "mirrorflow" and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), Counter(ids)
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        if panel["type"] == "row":
            continue
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert all('route=~"$route"' in t["expr"] for t in panel["targets"]), panel["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert "mirrorflow_" in variables["route"]["definition"]


def test_every_query_names_a_metric_a_worker_exports(dashboard: dict[str, Any]) -> None:
    series = exported()
    unknown = sorted({m for q in queries(dashboard) for m in METRIC.findall(q)} - set(series))
    assert not unknown, f"the dashboard queries metrics no worker exports: {unknown}"


def test_every_metric_of_a_worker_is_on_the_dashboard(dashboard: dict[str, Any]) -> None:
    series = exported()
    shown = {series[m] for q in queries(dashboard) for m in METRIC.findall(q) if m in series}
    assert sorted(set(series.values()) - shown) == [], "metrics without a panel"


def test_grafana_is_provisioned_from_the_repo_with_the_compose_prometheus() -> None:
    compose = load_compose()
    grafana = services(compose)["grafana"]
    mounts = {target: (REPO / source).resolve() for source, target in bind_mounts(grafana)}
    assert mounts[PurePosixPath("/etc/grafana/provisioning")] == PROVISIONING
    [provider] = yaml.safe_load((PROVISIONING / "dashboards" / "mirrorflow.yml").read_text())["providers"]
    assert mounts[PurePosixPath(provider["options"]["path"])] == DASHBOARD.parent
    [source] = yaml.safe_load((PROVISIONING / "datasources" / "prometheus.yml").read_text())["datasources"]
    host, port = re.fullmatch(r"http://([^:/]+):(\d+)", source["url"]).groups()  # type: ignore[union-attr]
    assert host in services(compose) and "prom/prometheus" in services(compose)[host]["image"]
    assert port == "9090"  # where the Prometheus image listens
