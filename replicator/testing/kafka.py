"""Several FakeClusters behind client factories, one per fake process."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from replicator.domain.withheld import GroupSays, group_says
from replicator.errors import ClusterError
from replicator.kafka.clients import ClientFactory
from replicator.testing.admin import FakeAdmin
from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeConsumer
from replicator.testing.process import FakeProcess
from replicator.testing.producer import FakeProducer
from replicator.testing.transactional import FakeTransactionalProducer


class FakeKafka:
    """Clusters by name; the clients of ``clients(process)`` find theirs by ``bootstrap.servers``."""

    def __init__(self, *names: str) -> None:
        self.clusters = {name: FakeCluster(name) for name in names}
        self.processes: dict[str, FakeProcess] = {}
        self.consumers: dict[str, list[FakeConsumer]] = {}
        self.producers: dict[str, list[FakeProducer]] = {}
        self.admins: dict[str, list[FakeAdmin]] = {}

    def __getitem__(self, name: str) -> FakeCluster:
        return self.clusters[name]

    def _of(self, settings: dict[str, Any]) -> FakeCluster:
        wanted = settings["bootstrap.servers"]
        for cluster in self.clusters.values():
            if cluster.bootstrap_servers == wanted:
                return cluster
        raise ValueError(f"no fake cluster at {wanted!r}")

    def clients(self, process: str = "worker") -> ClientFactory:
        """What a RouteWorker of fake process ``process`` builds its clients with."""
        proc = self.processes.setdefault(process, FakeProcess(process))

        def consumer(settings: dict[str, Any]) -> Consumer:
            made = FakeConsumer(settings, self._of(settings), proc)
            self.consumers.setdefault(process, []).append(made)
            return cast(Consumer, made)

        def producer(settings: dict[str, Any]) -> Producer:
            kind = FakeTransactionalProducer if "transactional.id" in settings else FakeProducer
            made = kind(settings, self._of(settings), proc)
            self.producers.setdefault(process, []).append(made)
            return cast(Producer, made)

        def admin(settings: dict[str, Any]) -> AdminClient:
            made = FakeAdmin(settings, self._of(settings), proc)
            self.admins.setdefault(process, []).append(made)
            return cast(AdminClient, made)

        def assignment(properties: Mapping[str, str], group: str, member: str, what: str) -> GroupSays | None:
            proc.checkpoint()
            cluster = self._of(dict(properties))
            try:  # ``failures["describe_group"]``: the child's ConsumerGroupDescribe timed out
                cluster.check_reachable("describe_group", proc)
            except KafkaException as exc:
                raise ClusterError(f"{what}: cannot describe group {group!r}: {exc.args[0].str()}",
                                   retriable=True) from exc
            return group_says(member, cluster.group(group).described())

        return ClientFactory(consumer=consumer, producer=producer, admin=admin, checkpoint=proc.checkpoint,
                             cpu=proc.cpu_seconds, assignment=assignment)

    def freeze(self, process: str) -> None:
        """SIGSTOP: the process's threads block at their next client call."""
        self.processes[process].frozen = True

    def thaw(self, process: str) -> None:
        """SIGCONT."""
        self.processes[process].frozen = False
        self.processes[process].thaws += 1

    def cut(self, process: str, cluster: str) -> None:
        """The process's network no longer reaches ``cluster`` (a partition between them)."""
        self.processes[process].cut.add(cluster)

    def heal(self, process: str, cluster: str) -> None:
        """The link is back."""
        self.processes[process].cut.discard(cluster)

    def expire(self, process: str) -> None:
        """The group gives up on the process's members (their session timed out)."""
        for consumer in self.consumers.get(process, []):
            consumer.group.expire(consumer.member_id)

    def kill(self, process: str, expire: bool = True) -> None:
        """SIGKILL: queued records vanish, nothing more is committed; sessions expire at once, or
        (``expire=False``) when ``expire`` is called, as the broker's session timeout would."""
        self.processes[process].killed = True
        for producer in self.producers.get(process, []):
            producer.crash()
        for consumer in self.consumers.get(process, []):
            consumer.crash(expire)

    def config_yaml(self, routes: str) -> str:
        """A mirrorflow.yaml naming these clusters, with ``routes`` (YAML text) appended."""
        clusters = "".join(f"  {name}: {{bootstrap.servers: \"{c.bootstrap_servers}\"}}\n"
                           for name, c in self.clusters.items())
        return f"clusters:\n{clusters}routes:\n{routes}"
