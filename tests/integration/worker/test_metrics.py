"""A worker's Prometheus endpoint reports what it copied, its latency and its lag."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from replicator.kafka.admin import create_topics
from tests.kafka_io import end_offsets, produce, total, wait_until
from tests.records import make_records, write_config
from tests.support import Worker, free_port


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


def test_metrics_endpoint(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 2})
    produce(primary.bootstrap_servers, unique_name, make_records(2, 1_000, "m"))
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "metered", "source": "primary", "target": "backup", "topics": [unique_name],
         "sla": {"heartbeats": False}}])  # counts only its own topic's partitions
    port = free_port()
    worker = Worker(config, "metered", log_dir=tmp_path, extra=["--metrics-port", str(port)])
    workers.append(worker)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{unique_name}", 2)) == 2_000, 60, "copy")
    label = f'route="metered",topic="{unique_name}"'
    wait_until(lambda: f"mirrorflow_records_replicated_total{{{label}}} 2000.0" in _scrape(port), 15, "counter")
    wait_until(lambda: f'mirrorflow_partition_lag{{partition="0",{label}}} 0.0' in _scrape(port), 20, "lag gauge")
    text = _scrape(port)
    assert 'mirrorflow_replication_latency_seconds_count{route="metered"}' in text
    assert 'mirrorflow_assigned_partitions{route="metered"} 2.0' in text
    for histogram in ("mirrorflow_loop_turn_seconds", "mirrorflow_topic_refresh_seconds"):
        counts = re.findall(rf'^{histogram}_count{{route="metered"}} (\d+)\.0$', text, re.MULTILINE)
        assert counts and int(counts[0]) > 0, histogram
    # Every metric the Grafana dashboard queries is on a running worker's /metrics.
    dashboard = json.loads((Path(__file__).parents[3] / "docker/grafana/dashboards/mirrorflow.json").read_text())
    queried = {m for p in dashboard["panels"] for t in p.get("targets", [])
               for m in re.findall(r"\bmirrorflow_[a-z_]+", t["expr"])}
    assert queried
    missing = [m for m in sorted(queried)
               if not any(f"# TYPE {name} " in text for name in (m, re.sub(r"_(bucket|sum|count)$", "", m)))]
    assert not missing, f"queried by the dashboard, not on /metrics: {missing}"
