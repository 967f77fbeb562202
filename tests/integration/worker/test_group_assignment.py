"""kafka.group_members.member_assignment against a real KIP-848 coordinator (asked by a child process): what the
withheld watch reads."""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer

from replicator.config import load_config
from replicator.domain.withheld import GroupSays
from replicator.kafka.admin import create_topics
from replicator.kafka.group_members import member_assignment
from replicator.worker.route_worker import RouteWorker
from replicator.worker.timeouts import WorkerTimeouts
from tests.kafka_io import leave_group
from tests.records import write_config


def test_the_coordinator_says_what_it_gave_a_member_under_the_id_its_client_knows(  # type: ignore[no-untyped-def]
        primary, unique_name) -> None:
    create_topics(primary.bootstrap_servers, {unique_name: 4})
    group = f"{unique_name}-group"
    consumer = Consumer({"bootstrap.servers": primary.bootstrap_servers, "group.id": group,
                         "group.protocol": "consumer", "log_level": 0})
    properties = {"bootstrap.servers": primary.bootstrap_servers}
    try:
        consumer.subscribe([unique_name])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 4:  # the assignment is an event: served by poll
            assert time.monotonic() < deadline, "no assignment within 60 s"
            consumer.poll(0.2)
        member = consumer.memberid()
        assert member
        every = {(unique_name, p) for p in range(4)}
        deadline = time.monotonic() + 30
        alone = GroupSays(given=frozenset(every), held_by_others=frozenset(), awaited_by_others=frozenset())
        while (found := member_assignment(properties, group, member, "cluster 'primary'")) != alone:
            assert time.monotonic() < deadline, f"the coordinator said {found}"  # it learns of the ack shortly
            time.sleep(0.2)
        assert member_assignment(properties, group, "no-such-member", "cluster 'primary'") is None
    finally:
        leave_group(consumer)


def test_a_running_worker_asks_its_group_what_it_gave_it_through_the_child(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, caplog) -> None:
    """The withheld watch's glue with real clients: the look asks, by a child process with the cluster's
    settings, what the route's group gave this worker's member, and the coordinator's answer names every
    partition the worker owns (a wrong member id, group or setting would leave the watch blind, silently)."""
    create_topics(primary.bootstrap_servers, {unique_name: 3})
    config = load_config(write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "ga", "source": "primary", "target": "backup", "topics": [unique_name],
         "sla": {"heartbeats": False}}]))
    caplog.set_level(logging.DEBUG, logger="replicator.worker.subscription")
    worker = RouteWorker(config, config.routes[0], None, timeouts=WorkerTimeouts(assignment=1.0))
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()

    def read() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("group assignment read")]

    try:
        deadline = time.monotonic() + 90
        while not any(line.endswith(" given=3") for line in read()):
            assert thread.is_alive(), "the worker stopped"
            assert time.monotonic() < deadline, f"no answer naming the 3 partitions: {read()[-3:]}"
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(30)
    said = next(line for line in read() if line.endswith(" given=3"))
    assert "route=ga group=mirrorflow-ga member=" in said
    assert worker.failure is None
