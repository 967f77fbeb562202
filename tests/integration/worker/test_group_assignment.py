"""kafka.group_members.member_assignment against a real KIP-848 coordinator (asked by a child process): what the
withheld watch reads."""

from __future__ import annotations

import time

from confluent_kafka import Consumer

from replicator.kafka.admin import create_topics
from replicator.kafka.group_members import member_assignment


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
        while (found := member_assignment(properties, group, member, "cluster 'primary'")) != (every, set()):
            assert time.monotonic() < deadline, f"the coordinator said {found}"  # it learns of the ack shortly
            time.sleep(0.2)
        assert member_assignment(properties, group, "no-such-member", "cluster 'primary'") is None
    finally:
        consumer.close()
