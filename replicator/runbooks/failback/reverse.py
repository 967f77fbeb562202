"""The reverse route of a failback: which replicas it copies, and running it until it has copied enough.

It is an ordinary route (:class:`~replicator.worker.route_worker.RouteWorker`, its
own consumer group ``mirrorflow-<route>.failback`` on the backup, its own offset
syncs on the primary) that exists only while a failback runs: it is built from the
route and the replicas, never read from the config, so no ``mirrorflow run`` can
start it by mistake later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.checkpoint import Partition
from replicator.domain.failback import FailbackMode, ReverseTopic, reverse_route_settings
from replicator.domain.failover import is_application_topic
from replicator.domain.naming import group_id
from replicator.domain.provenance import should_skip
from replicator.errors import ClusterError, MirrorFlowError
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_offsets import read_committed
from replicator.kafka.topics import source_partitions
from replicator.worker.records import headers_of

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class ReverseCopyFailed(MirrorFlowError):
    """The reverse route stopped on an error (it names the record or the cluster)."""


def reverse_topics(config: Config, route: RouteConfig,
                   only: Collection[str] | None = None) -> tuple[ReverseTopic, ...]:
    """The route's replicas that exist on its target (of the topics ``only`` names, when given), each with its
    original name and partitions."""
    from replicator.state.repository import route_topics
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            originals = sorted({t.topic for t in route_topics(session, route.name) if is_application_topic(t.topic)
                                and (only is None or t.topic in only)})
    policy = config.policy(route)
    on_backup = partitions_of(config, route.target)
    # Under prefix/mapping, producers on the target write to topics of the original names (the
    # failover said so); a route of the config that copies them back already is left to do it.
    carried = [r.topic_filter for r in config.routes if (r.source, r.target) == (route.target, route.source)]
    out = []
    for original in originals:
        replica = policy.format_remote_topic(route.source, original)
        if replica in on_backup:
            out.append(ReverseTopic(replica, original, on_backup[replica]))
        if original != replica and original in on_backup and not any(f.select([original]) for f in carried):
            out.append(ReverseTopic(original, original, on_backup[original], copied=False))
    return tuple(out)


def partitions_of(config: Config, cluster: str) -> dict[str, int]:
    """Topic -> partitions of ``cluster`` (ClusterError naming it)."""
    try:
        return source_partitions(AdminClient(admin_settings(config.cluster(cluster).client_properties())))
    except ClusterError as exc:
        raise ClusterError(f"cluster {cluster!r}: {exc}", retriable=exc.retriable) from None


def reverse_config(config: Config, route: RouteConfig, topics: Sequence[ReverseTopic],
                   mode: FailbackMode) -> tuple[Config, RouteConfig]:
    """The config with the reverse route added (it is never written anywhere), and the reverse route."""
    settings = reverse_route_settings(route.model_dump(), route.source, route.target, topics, mode)
    reverse = RouteConfig.model_validate(settings)
    return config.model_copy(update={"routes": (*config.routes, reverse)}), reverse


def replica_partitions(topics: Sequence[ReverseTopic]) -> list[Partition]:
    """Every partition of the replicas (the reverse route's source partitions)."""
    return [(t.replica, p) for t in topics for p in range(t.partitions)]


def watermarks(properties: Mapping[str, str], partitions: Sequence[Partition]) -> dict[Partition, tuple[int, int]]:
    """(low, high) of each partition."""
    consumer = Consumer({**admin_settings(properties), "group.id": "mirrorflow-failback-probe",
                         "enable.auto.commit": "false"})
    try:
        out = {}
        for topic, partition in partitions:
            try:
                out[(topic, partition)] = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                                         timeout=10.0, cached=False)
            except Exception as exc:  # noqa: BLE001 - KafkaException: named with the partition
                raise ClusterError(f"watermarks of {topic}-{partition}: {exc}", retriable=True) from None
        return out
    finally:
        consumer.close()


def left_to_copy(properties: Mapping[str, str], positions: Mapping[Partition, tuple[int, int]],
                 skip_from: str | None, timeout: float = 30.0, any_only: bool = False) -> dict[Partition, int]:
    """Records in ``[position, end)`` of each partition the reverse route would copy.

    A record born on ``skip_from`` (its origin header) is skipped by the route's loop
    check, and so is a transaction marker: neither is left to copy. Partitions with
    nothing in between are not read at all. ``any_only``: stop at the first one found
    (the answer is then only "some are left").
    """
    wanted = {tp: (start, end) for tp, (start, end) in positions.items() if start < end}
    if not wanted:
        return {}
    consumer = Consumer({**admin_settings(properties), "group.id": "mirrorflow-failback-probe",
                         "enable.auto.commit": "false", "isolation.level": "read_committed",
                         "enable.partition.eof": "true", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(t, p, start) for (t, p), (start, _) in wanted.items()])
    left: dict[Partition, int] = {}
    open_ = dict(wanted)
    deadline = time.monotonic() + timeout
    try:
        while open_ and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.2):
                key = (str(message.topic()), int(message.partition() or 0))
                if key not in open_:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:  # read to the end
                        del open_[key]
                    continue
                if (message.offset() or 0) >= open_[key][1]:
                    del open_[key]
                    continue
                if skip_from is None or not should_skip(headers_of(message), skip_from):
                    left[key] = left.get(key, 0) + 1
                    if any_only:
                        return left
        for key, (start, end) in open_.items():  # not read in time: count it all
            left[key] = left.get(key, 0) + end - start
    finally:
        consumer.close()
    return {k: n for k, n in left.items() if n}


@dataclass
class ReverseCopy:
    """The reverse route's worker, in a thread of this process, until :meth:`stop`."""

    config: Config
    route: RouteConfig

    def __post_init__(self) -> None:
        from replicator.state.repository import register_routes
        from replicator.state.store import StateStore
        from replicator.worker.route_worker import RouteWorker

        self._store = StateStore(self.config.state.url)
        self._store.run(lambda session: register_routes(session, [self.route]))
        self._worker = RouteWorker(self.config, self.route, self._store)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=f"route-{self.route.name}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._worker.run(self._stop)
        except BaseException as exc:  # noqa: BLE001 - reported by check() / stop()
            self._error = exc

    def check(self) -> None:
        """Raise what stopped the worker, if it stopped."""
        if self._error is not None:
            raise ReverseCopyFailed(f"reverse route {self.route.name}: {self._error}") from self._error
        if not self._thread.is_alive():
            raise ReverseCopyFailed(f"reverse route {self.route.name}: its worker stopped")

    def stop(self) -> None:
        """Flush, commit and leave the group; raise what stopped it on its own."""
        self._stop.set()
        self._thread.join(timeout=120)
        self._store.close()
        if self._error is not None:
            raise ReverseCopyFailed(f"reverse route {self.route.name}: {self._error}") from self._error


def copy_until_caught_up(config: Config, reverse: RouteConfig, topics: Sequence[ReverseTopic], timeout: float | None,
                         say: Say, moving_ends: bool = False, stall_seconds: float = 300.0) -> dict[Partition, int]:
    """Run the reverse route until nothing is left to copy; the records left (empty: caught up).

    ``moving_ends`` False: up to the replicas' ends as they are now (the bulk copy);
    True: up to their ends as they move, until they stop (the drain), or ``timeout``.
    ReverseCopyFailed when its worker stops, or copies nothing for ``stall_seconds``
    while records are left (the old primary refuses writes, say: its log names why).
    """
    backup = config.cluster(reverse.source).client_properties()
    partitions = replica_partitions(topics)
    skip_from = reverse.target if reverse.loop_check else None
    ends = {tp: high for tp, (_, high) in watermarks(backup, partitions).items()}
    copy = ReverseCopy(config, reverse)
    began, told, last, still = time.monotonic(), 0.0, None, 0
    moved = began
    try:
        while True:
            time.sleep(1.0)
            copy.check()
            if moving_ends:
                ends = {tp: high for tp, (_, high) in watermarks(backup, partitions).items()}
            committed = read_committed(backup, group_id(reverse), partitions,
                                       f"reverse route {reverse.name}: {reverse.source!r}")
            behind = sum(max(0, end - committed.get(tp, 0)) for tp, end in ends.items())
            still = still + 1 if committed == last else 0
            if committed != last:
                moved = time.monotonic()
            # Done, or not moving for 3 s: what is left may be records the loop check skips.
            if (behind == 0 or still >= 3) and not left_to_copy(
                    backup, {tp: (committed.get(tp, 0), end) for tp, end in ends.items()}, skip_from,
                    any_only=True):
                return {}
            if time.monotonic() - moved >= stall_seconds:
                raise ReverseCopyFailed(f"reverse route {reverse.name}: nothing copied for {stall_seconds:.0f} s "
                                        f"with {behind} offsets left: is {reverse.target!r} accepting writes? (the "
                                        "log says why; run the failback again to go on)")
            last = committed
            elapsed = time.monotonic() - began
            if timeout is not None and elapsed >= timeout:
                return left_to_copy(backup, {tp: (committed.get(tp, 0), end) for tp, end in ends.items()},
                                    skip_from)
            if elapsed - told >= 5.0:
                told = elapsed
                say(f"  {reverse.name}: {behind} offsets behind the replicas' ends, {elapsed:.0f} s")
    finally:
        copy.stop()
