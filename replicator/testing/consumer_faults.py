"""What a test does to a fake consumer: the ways librdkafka consumers were seen to go wrong.

Each is a state of the client that ``FakeConsumer`` then acts out (its fetches, its group's word, its close).
"""

from __future__ import annotations

import threading
from collections import deque

from confluent_kafka import KafkaException

from replicator.testing.group import FakeGroup, id_still_used
from replicator.testing.message import FakeMessage

TP = tuple[str, int]


class ConsumerFaults:
    """Silenced partitions, a deaf client, a lost coordinator, a drifting position, a fenced member, a crash."""

    closed: bool
    member_id: str
    group: FakeGroup
    positions: dict[TP, int | None]
    silenced: dict[TP, bool]
    deaf: bool
    group_deaf: bool
    close_blocks: threading.Event | None
    fatal: KafkaException | None
    errors: deque[FakeMessage]

    def silence(self, topic: str, partition: int, seek_cures: bool = True) -> None:
        """librdkafka no longer fetching an assigned partition, and saying nothing (strimzi #10612, after a
        rebalance): its position stays while its log grows, until the application seeks it (unless not
        ``seek_cures``) or a consumer is assigned it again."""
        self.silenced[(topic, partition)] = seek_cures

    def deafen(self, close_blocks: threading.Event | None = None) -> None:
        """This client no longer getting answers from a cluster that answers every other client (seen with
        exactly-once after a clean restart of the source broker): it fetches nothing and says nothing, and
        reading committed offsets times out. Seeks do not cure it; a new consumer works. With ``close_blocks``
        its close does not return until that event is set (seen too)."""
        self.deaf, self.close_blocks = True, close_blocks

    def lose_coordinator(self) -> None:
        """Deaf (``deafen``), and to its group's coordinator too: its heartbeats go nowhere, and it hears nothing
        of its session running out, keeping what it owned as if nothing happened (seen after a clean restart of
        a one-node source: one worker's consumer said nothing of the outage, fetched nothing after it, and did not
        hear that the group gave its partitions to the others; the long fault run, seed 444)."""
        self.deaf = self.group_deaf = True

    def drift(self, topic: str, partition: int, offset: int) -> None:
        """librdkafka moving an assigned partition's fetch position on its own, with no seek of the
        application (seen in chaos runs: records already copied came again from the log start)."""
        self.positions[(topic, partition)] = offset

    def fence(self) -> None:
        """The coordinator fenced this static member and refuses its rejoin until its session times out (seen
        on Kafka 4.1 after the coordinator stalled while the assignment moved: a heartbeat librdkafka gave up
        on was answered with a new member epoch it never read; its next heartbeat, in the short form, was
        fenced; its rejoin at epoch 0 under the same id refused as UNRELEASED_INSTANCE_ID). The member keeps its
        partitions in the group until ``FakeGroup.expire``; the client is in librdkafka's fatal state."""
        self.fatal = id_still_used()
        self.errors.append(FakeMessage(None, None, -1, error=self.fatal.args[0]))

    def crash(self, expire: bool = True) -> None:
        """Die like ``kill -9``: nothing more committed; the session expires at once (or when the
        test says, with ``FakeKafka.expire``)."""
        self.closed = True
        if expire:
            self.group.expire(self.member_id)
