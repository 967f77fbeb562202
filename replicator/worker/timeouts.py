"""How long a route worker waits for what: one frozen object, so a test can shorten every wait at once."""

from __future__ import annotations

from dataclasses import dataclass

from replicator.domain.outage import HOLD_AFTER_S
from replicator.worker.subscription import REFRESH_SECONDS


@dataclass(frozen=True, slots=True)
class WorkerTimeouts:
    """How long the worker waits for what (seconds)."""

    handover: float = 10.0  # a revocation waits this long for the target to acknowledge what is in flight
    shutdown: float = 30.0  # a stop waits this long, then commits what was acknowledged
    retry: float = 1.0  # between attempts to place partitions while the source does not answer
    backpressure_report: float = 5.0  # a source paused longer than this by a full queue is logged
    refresh: float = REFRESH_SECONDS  # between looks at the source's topics
    rejoin: float = 2.0  # between attempts to join while the group still holds this worker's id
    stalled: float = 60.0  # no delivery report this long while the target answers: the producer is replaced
    # A partition's oldest record in flight waited this long: held apart (worker.held_apart). Its records filling
    # the producer's queue unacknowledged for ack_give_up s (librdkafka's own request.timeout.ms: a slow link's
    # requests may take seconds, a node that answers nothing for this long is gone), they are dropped to make
    # room for the others; it probes again after ack_retry s (doubling).
    ack_stall: float = 5.0
    ack_give_up: float = 30.0
    ack_retry: float = 5.0
    # Between reads of the owned partitions' ends (the lag gauges, stuck partitions): one ListOffsets of every
    # one, whose thousands of futures confluent-kafka resolves in Python. Read at each 5 s look, they and the
    # watches over them were a fifth of an idle worker's CPU at 2,000 partitions (5.5-6.0 % of a core, 4.3-4.7 %
    # read every 10 s; bench/README.md).
    lag: float = 10.0
    # How often a worker asks its group's coordinator what it gave it (domain.withheld); a child process asks
    # (kafka.group_members: librdkafka can abort the process that asks), ~0.15 s of CPU each time.
    assignment: float = 60.0
    # For a minute after this worker's assignment changed (a rebalance, new clients), it asks every this many s:
    # the withheld partitions the fault harness found came in the middle of rebalances (seed 44's pairs: two, found
    # by the once-a-minute ask after 80 s).
    assignment_soon: float = 10.0
    # Every owned partition's fetch position still this long (stuck_after, if shorter) with records past it: the
    # consumer no longer fetches (librdkafka #5153, after a source restart), new clients (worker/watches.py).
    client_still: float = 30.0
    # Exactly-once: a due commit waits for what is in flight; no report at all this long while the target answers
    # (librdkafka's producer lost the transaction coordinator and never found it again), the producer is replaced.
    acks_due: float = 30.0
    # A partition with nothing in flight whose target end has not moved this long sends its next record alone
    # (``InFlight.alone_when_quiet``): the target may have forgotten this worker's producer there. Its brokers
    # forget one a day after its last records' timestamps, so at their next look (every 10 minutes) when the
    # records copied are that old: a burst after a quiet minute pays one round trip.
    quiet: float = 60.0
    # The target's brokers forget a producer on a partition once the timestamp of its last records there is this
    # old (their ``producer.id.expiration.ms``, read by ``mirrorflow run``; Kafka's default a day). Older records
    # are copied serially while few are in flight (``InFlight.serial``).
    forgets: float = 86_400.0
    close: float = 10.0  # a client that stopped getting answers is given this long to close, then left behind
    # At a hold's end (the source answers again) the old source consumer is given this long to reach its group's
    # coordinator before it is closed: librdkafka sends a member's leave only while it knows its coordinator.
    coordinator: float = 5.0
    outage_hold: float = HOLD_AFTER_S  # the source out of reach this long: copying held until the worker rejoins
