"""A record larger than the target accepts stops the route, naming it; nothing after it is committed."""

from __future__ import annotations

import time

from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, produce, read_all, wait_until
from tests.records import write_config
from tests.support import Worker


def test_oversized_record_stops_the_route_at_its_offset(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 1})
    create_topics(backup.bootstrap_servers, {f"primary.{unique_name}": 1}, {"max.message.bytes": "2000"})
    now = int(time.time() * 1000)
    records = [Rec(0, b"k", (b"x" * (8_000 if n == 40 else 100)), (), now + n) for n in range(80)]
    produce(primary.bootstrap_servers, unique_name, [r for r in records])
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "big", "source": "primary", "target": "backup", "topics": [unique_name],
         "producer": {"compression.type": "none"}}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    assert worker.process.wait(60) == 1
    output = worker.output()
    assert (f"the record of {unique_name}[0] at source offset 40 (8001 bytes) is larger than the target "
            "accepts") in output, output[-1500:]
    # A refused batch fails every record in it: the commit stops at the first refused one,
    # and the target holds exactly the records before it.
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-big", unique_name, 1) != {}, 15, "commit")
    position = committed(primary.bootstrap_servers, "mirrorflow-big", unique_name, 1)[0]
    assert 0 <= position <= 40
    assert read_all(backup.bootstrap_servers, f"primary.{unique_name}", 1)[0] == records[:position]
