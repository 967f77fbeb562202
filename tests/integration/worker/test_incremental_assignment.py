"""KIP-848 incremental assignment: a joining worker or a new topic moves only the partitions concerned."""

from __future__ import annotations

import re
import threading
import time

from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, end_offsets, produce, wait_until
from tests.records import write_config
from tests.support import Worker

PARTITIONS = 6


def _partitions(output: str, event: str) -> list[set[str]]:
    """Each ``assigned``/``revoked`` log line's partitions, in order."""
    found = []
    for line in output.splitlines():
        match = re.search(rf"msg='{event} route=\S+ partitions=(\S*)'", line)
        if match:
            found.append({p.split("@")[0] for p in match.group(1).split(",") if p and p != "-"})  # -: none
    return found


def _owned(output: str) -> set[str]:
    owned: set[str] = set()
    for line in output.splitlines():
        match = re.search(r"msg='(assigned|revoked) route=\S+ partitions=(\S*)'", line)
        if match:
            parts = {p.split("@")[0] for p in match.group(2).split(",") if p and p != "-"}  # -: none
            owned = owned | parts if match.group(1) == "assigned" else owned - parts
    return owned


def test_joining_worker_and_new_topic_move_only_their_partitions(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    topic = f"{unique_name}-a"
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "inc", "source": "primary", "target": "backup", "topics": [f"{unique_name}-.*"],
         "sla": {"heartbeats": False}}])  # counts only its own topics' partitions
    one = Worker(config, log_dir=tmp_path)
    workers.append(one)
    wait_until(lambda: len(_owned(one.output())) == PARTITIONS, 60, "the first worker to own every partition")

    stop, sent = threading.Event(), [0]

    def keep_producing() -> None:  # a steady stream on every partition while the group changes
        while not stop.is_set():
            now = int(time.time() * 1000)
            sent[0] += produce(primary.bootstrap_servers, topic,
                               [Rec(p, None, b"v", (), now) for p in range(PARTITIONS)])
            time.sleep(0.05)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    stalls = _watch_stalls(backup.bootstrap_servers, f"primary.{topic}", seconds=0)  # warm the reader
    try:
        two = Worker(config, log_dir=tmp_path)
        workers.append(two)
        stalls = _watch_stalls(backup.bootstrap_servers, f"primary.{topic}", seconds=15)
        wait_until(lambda: bool(_owned(two.output())), 30, "the second worker to get partitions")
        moved = _owned(two.output())
        kept = _owned(one.output())
        assert moved and kept and not moved & kept and len(moved | kept) == PARTITIONS
        revoked_from_one = set().union(*_partitions(one.output(), "revoked"))
        assert revoked_from_one == moved, "only the partitions handed to the new worker were revoked"
        kept_stall = max(stalls[p] for p in range(PARTITIONS) if f"{topic}[{p}]" in kept)
        print(f"longest stall of a partition that stayed, while a worker joined: {kept_stall:.2f} s; "
              f"of one that moved: {max(stalls[p] for p in range(PARTITIONS) if f'{topic}[{p}]' in moved):.2f} s")

        # A new topic: its partitions are assigned; the broker's uniform assignor may move
        # at most as many existing partitions as it adds, to keep the workers balanced
        # (each moved one flushed and committed first); the others are not touched.
        new_topic = f"{unique_name}-b"
        create_topics(primary.bootstrap_servers, {new_topic: 2})
        everything = {f"{topic}[{p}]" for p in range(PARTITIONS)} | {f"{new_topic}[{p}]" for p in range(2)}

        def settled() -> bool:
            one_now, two_now = _owned(one.output()), _owned(two.output())
            return one_now | two_now == everything and not one_now & two_now

        wait_until(settled, 30, "every partition, the new topic's included, to be owned by one worker")
        changed_owner = (kept - _owned(one.output())) | (moved - _owned(two.output()))
        assert len(changed_owner) <= 2, f"adding 2 partitions moved {sorted(changed_owner)}"
        print(f"existing partitions that changed owner when a 2-partition topic was added: {len(changed_owner)}")
    finally:
        stop.set()
        producer.join(10)


def _watch_stalls(bootstrap: str, topic: str, seconds: float) -> dict[int, float]:
    """For ``seconds``: per partition, the longest time its end offset on the target did not move."""
    last = end_offsets(bootstrap, topic, PARTITIONS)
    since = {p: time.monotonic() for p in range(PARTITIONS)}
    longest = {p: 0.0 for p in range(PARTITIONS)}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now, ends = time.monotonic(), end_offsets(bootstrap, topic, PARTITIONS)
        for p in range(PARTITIONS):
            if ends[p] != last[p]:
                since[p] = now
            longest[p] = max(longest[p], now - since[p])
        last = ends
    return longest
