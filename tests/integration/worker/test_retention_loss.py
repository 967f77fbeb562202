"""Retention ran ahead of the route: the exact lost range is reported, never a silent jump."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from replicator.kafka.admin import admin_client, create_topics
from tests.kafka_io import committed, end_offsets, produce, read_all, total, wait_until
from tests.records import make_records, write_config
from tests.support import Worker


def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    """Advance the log start offset, as retention does."""
    admin = admin_client(bootstrap)  # kept alive until the futures resolve
    for future in admin.delete_records([TopicPartition(topic, 0, offset)]).values():
        future.result(timeout=15)


@pytest.mark.parametrize("on_data_loss", ["continue", "fail"])
def test_lost_range_is_reported_exactly(primary, backup, unique_name, tmp_path, workers, on_data_loss) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 1})
    records = make_records(1, 300, "r")
    produce(primary.bootstrap_servers, unique_name, records[:100])
    route = {"name": "ret", "source": "primary", "target": "backup", "topics": [unique_name],
             "on_data_loss": on_data_loss}
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [route])
    first = Worker(config, log_dir=tmp_path)
    workers.append(first)
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-ret", unique_name, 1) == {0: 100}, 60,
               "the first 100 records to be copied")
    assert first.terminate()[0] == 0

    produce(primary.bootstrap_servers, unique_name, records[100:])
    _delete_before(primary.bootstrap_servers, unique_name, 250)  # 100..249 vanish uncopied
    second = Worker(config, log_dir=tmp_path)
    workers.append(second)
    if on_data_loss == "fail":
        assert second.process.wait(60) == 1
        assert f"{unique_name}[0]: offsets 100..249 were deleted by retention" in second.output()
        assert total(end_offsets(backup.bootstrap_servers, f"primary.{unique_name}", 1)) == 100
    else:
        wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-ret", unique_name, 1) == {0: 300},
                   60, "the route to go on after the loss")
        got = read_all(backup.bootstrap_servers, f"primary.{unique_name}", 1)[0]
        assert got == records[:100] + records[250:]
        assert "lost_from=100 lost_to_exclusive=250 count=150" in second.output()
    from replicator.state.repository import data_losses
    from replicator.state.store import StateStore

    with StateStore(f"sqlite:///{tmp_path / 'state.db'}") as store, store.session() as session:
        assert data_losses(session, "ret") == [(unique_name, 0, 100, 250)]
    # `mirrorflow status` no longer says only "lag 0": the loss is there, with its range.
    status = _status(config, "--json")
    lost = {row["topic"]: row["lost_to_retention"] for row in json.loads(status)}
    assert lost[unique_name] == [[100, 250]]
    states = {row["topic"]: (row["state"], row["state_detail"]) for row in json.loads(status)}
    assert states[unique_name] == ("LOST_RECORDS", "150 at [100,250)")
    assert all(ranges == [] for topic, ranges in lost.items() if topic != unique_name)  # the heartbeats: none
    assert "150 at [100,250)" in _status(config)


def _status(config: Path, *args: str) -> str:
    done = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "status", "--config", str(config),
                           *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout
