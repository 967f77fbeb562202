"""A route that starts after its topic already had records (``start: latest``): what backfills are for.

Used by the backfill tests (in process, the DAG, a Spark standalone cluster): the topic's older records
are written first, a worker of the route starts at the end of each partition, newer records are written
and copied, and the worker stops; the replica then holds the newer records only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, produce, wait_until
from tests.records import write_config
from tests.support import Worker

Records = Mapping[int, list[Rec]]


@dataclass(frozen=True)
class LateRoute:
    """A topic whose ``old`` records per partition predate its `start: latest` route, which copied ``new``."""

    topic: str
    route: str
    config: Path
    old: Records
    new: Records

    @property
    def replica(self) -> str:
        """The topic's name on the target (the route's policy is prefix)."""
        return f"primary.{self.topic}"


def started_late(primary: str, backup: str, work: Path, topic: str, route: str, old: Records, new: Records,
                 keep: list[Worker] | None = None) -> LateRoute:
    """Write ``old`` to a new ``topic``, run a `start: latest` route's worker while ``new`` is written and copied;
    its config is ``work/mirrorflow.yaml``. The worker is stopped (SIGTERM, exit 0), or left running in
    ``keep`` (the caller stops it)."""
    partitions = len(old)
    create_topics(primary, {topic: partitions})
    produce(primary, topic, [r for p in range(partitions) for r in old[p]])
    config = write_config(work / "mirrorflow.yaml", primary, backup, [
        {"name": route, "source": "primary", "target": "backup", "topics": [topic], "start": "latest"}])
    running = Worker(config, route, log_dir=work)
    if keep is not None:
        keep.append(running)
    try:
        wait_until(lambda: all(f"{topic}[{p}]@{len(old[p])}" in running.output() for p in range(partitions)), 60,
                   "the route to start at the end of each partition")
        produce(primary, topic, [r for p in range(partitions) for r in new[p]])
        done = {p: len(old[p]) + len(new[p]) for p in range(partitions)}
        wait_until(lambda: committed(primary, f"mirrorflow-{route}", topic, partitions) == done, 120,
                   "the route to copy the new records")
    finally:
        if keep is None:
            code, _ = running.terminate()
            assert code == 0, running.output()[-2000:]
    return LateRoute(topic, route, config, old, new)
