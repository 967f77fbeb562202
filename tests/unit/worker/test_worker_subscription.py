"""Subscription: what a running route copies, re-read from the source without a restart (on the fakes)."""

from __future__ import annotations

import gc
import logging
import time

import pytest
from prometheus_client import REGISTRY

from replicator.config import parse_config
from replicator.testing import FakeKafka
from replicator.worker.subscription import Subscription


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source", "target")
    fake["source"].create_topic("orders", 2)
    fake["source"].create_topic("payments", 1)
    fake["source"].create_topic("audit", 1)
    return fake


def subscription(kafka: FakeKafka, topics: str = "[orders, payments]", options: str = "") -> Subscription:
    config = parse_config(kafka.config_yaml(
        f"  - {{name: r, source: source, target: target, topics: {topics}, sla: {{heartbeats: false}}{options}}}\n"))
    sub = Subscription(config, config.routes[0], clients=kafka.clients())
    sub.open()
    return sub


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "replicator.worker.subscription"]


def test_the_first_refresh_makes_the_sync_topic_and_the_target_topics(kafka: FakeKafka) -> None:
    sub = subscription(kafka)
    assert sorted(sub.refresh() or []) == ["orders", "payments"]
    target = kafka["target"]
    assert set(target.topics) == {sub.sync_topic, "source.orders", "source.payments"}
    assert len(target.topics["source.orders"].logs) == 2
    assert target.topics[sub.sync_topic].configs["cleanup.policy"] == "compact"
    assert target.topics[sub.sync_topic].configs["segment.ms"] == "3600000"  # compaction keeps a run's last record
    assert sub.target_of == {"orders": "source.orders", "payments": "source.payments"}
    assert sub.source_of == {"source.orders": "orders", "source.payments": "payments"}
    assert sub.partitions == {"orders": 2, "payments": 1}
    assert sub.merged == frozenset()
    assert sub.limit_of == {"orders": 1048588, "payments": 1048588}
    assert set(sub.topic_ids) == {"orders", "payments"}


@pytest.mark.parametrize(("change", "names", "partitions"), [
    (lambda source: None, None, {"orders": 2, "payments": 1}),  # nothing changed: None
    (lambda source: source.create_topic("audit-2", 1), None, {"orders": 2, "payments": 1}),  # not selected
    (lambda source: source.add_partitions("orders", 3), ["orders", "payments"], {"orders": 3, "payments": 1}),
    (lambda source: source.delete_topic("payments"), ["orders"], {"orders": 2}),
], ids=["unchanged", "unselected-topic", "grown", "deleted"])
def test_a_refresh_returns_the_new_topic_list_only_when_it_changed(kafka: FakeKafka, change, names,  # type: ignore[no-untyped-def]
                                                                 partitions: dict[str, int]) -> None:
    sub = subscription(kafka)
    sub.refresh()
    change(kafka["source"])
    assert (sorted(found) if (found := sub.refresh()) is not None else None) == names
    assert sub.partitions == partitions
    assert {t: len(kafka["target"].topics[f"source.{t}"].logs) for t in partitions} == partitions


def test_each_change_is_one_line(kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "replicator.worker.subscription")
    sub = subscription(kafka, topics="['.*']", options=", exclude: [audit]")
    sub.refresh()
    sub.refresh()
    kafka["source"].create_topic("refunds", 1)
    kafka["source"].delete_topic("payments")
    sub.refresh()
    sub.refresh()
    assert messages(caplog) == ["subscription route=r topics=2 added=orders,payments removed=-",
                                "subscription route=r topics=2 added=refunds removed=payments"]


def test_sources_merged_into_one_target_are_known_as_merged(kafka: FakeKafka) -> None:
    sub = subscription(kafka, topics="[orders, payments, audit]",
                       options=", policy: {mapping: {orders: all, payments: all, audit: audit-dr}, merge: true}")
    sub.refresh()
    assert sub.target_of == {"orders": "all", "payments": "all", "audit": "audit-dr"}
    assert sub.merged == frozenset({"all"})
    assert len(kafka["target"].topics["all"].logs) == 2  # as wide as its widest source
    assert sub.source_of["audit-dr"] == "audit" and sub.source_of["all"] == "orders"


def recreated_total(topic: str) -> float:
    return REGISTRY.get_sample_value("mirrorflow_topics_recreated_total", {"route": "r", "topic": topic}) or 0


def test_a_topic_deleted_and_created_again_is_reported_once_per_new_id(kafka: FakeKafka,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "replicator.worker.subscription")
    sub = subscription(kafka)
    sub.refresh()
    old = kafka["source"].topics["orders"].topic_id
    before = recreated_total("orders")
    kafka["source"].delete_topic("orders")
    kafka["source"].create_topic("orders", 2)
    new = kafka["source"].topics["orders"].topic_id
    sub.refresh()
    sub.refresh()
    sub.recreated("orders", new, "seen again by the positioner")
    assert sub.recreations == 1
    assert recreated_total("orders") - before == 1
    assert sub.topic_ids["orders"] == new
    said = messages(caplog)
    assert len(said) == 1 and f"topic=orders topic_id={new}" in said[0] and f"topic id was {old}" in said[0]


def test_describe_ids_leaves_out_a_topic_that_vanished(kafka: FakeKafka) -> None:
    sub = subscription(kafka)
    ids = sub.describe_ids(["orders", "gone"])
    assert ids == {"orders": kafka["source"].topics["orders"].topic_id}
    assert sub.describe_ids([]) == {}


@pytest.mark.parametrize(("frozen", "answers"), [(False, True), (True, False)])
def test_target_answers_only_when_its_cluster_does(kafka: FakeKafka, frozen: bool, answers: bool) -> None:
    sub = subscription(kafka)
    if frozen:
        kafka["target"].freeze()
    assert sub.target_answers(timeout=0.1) is answers


def test_refresh_is_due_again_after_its_interval_or_when_forced(kafka: FakeKafka) -> None:
    sub = subscription(kafka)
    assert sub.due()
    sub.refresh()
    assert not sub.due()
    sub.force_refresh()
    assert sub.due()


def test_a_look_checks_every_new_topic_and_a_rotating_share_of_the_known_ones() -> None:
    from replicator.worker.subscription import rotating_share

    names = [f"t{i}" for i in range(10)]
    assert rotating_share(names, frozenset(), 0, size=3) == (names, 0)  # all new: all checked
    seen = frozenset(names[:8])  # t8, t9 are new
    checked, cursor = rotating_share(names, seen, 0, size=3)
    assert checked == ["t8", "t9", "t0", "t1", "t2"] and cursor == 3
    looks = [checked]
    for _ in range(3):
        checked, cursor = rotating_share(names, seen, cursor, size=3)
        looks.append(checked)
    assert looks[2] == ["t8", "t9", "t6", "t7", "t0"]  # wraps around
    assert set().union(*looks[:3]) == set(names)  # every known topic within ceil(8 / 3) looks
    assert rotating_share(names, seen, 5, size=8) == (names[8:] + names[:8], 0)  # few topics: all, always


def test_among_many_topics_a_recreated_one_is_found_within_its_share_of_looks(
        kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    from replicator.worker import subscription as module

    monkeypatch.setattr(module, "ID_CHECKS_PER_LOOK", 2)
    for n in range(6):
        kafka["source"].create_topic(f"t{n}", 1)
    sub = subscription(kafka, topics="['t.*']")
    sub.refresh()  # all new: every id known
    kafka["source"].delete_topic("t5")
    kafka["source"].create_topic("t5", 1)
    looks = 0
    while sub.recreations == 0 and looks < 10:
        sub.refresh()
        looks += 1
    assert sub.recreations == 1 and looks <= 3  # 6 known topics, 2 a look


def test_a_look_asks_kafka_with_the_cycle_collector_held_off(kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/refresh_stall.py, 2,000 topics: a full collection that started while a look held Kafka's answers
    scanned them all, and held the copy loop's thread up to 98 ms. Every request a look makes (the topics,
    their ids, the replicas made, their limits, the owned partitions' ends) runs with the collector held off,
    and it is back on after the look."""
    from replicator.testing.admin import FakeAdmin

    sub = subscription(kafka, topics="['.*']")
    sub.refresh()  # the sync topic, made once, outside any look's requests
    collector_on: list[tuple[str, bool]] = []
    check = FakeAdmin._check

    def noting(admin: FakeAdmin, request: str = "") -> None:
        collector_on.append((request, gc.isenabled()))
        check(admin, request)

    monkeypatch.setattr(FakeAdmin, "_check", noting)
    kafka["source"].create_topic("refunds", 2)  # a change: the look makes its replica and reads its limit
    sub.start_look([("orders", 0), ("refunds", 1)])
    while (finished := sub.finished_look()) is None:
        time.sleep(0.01)
    assert sorted(sub.apply(finished.result()) or []) == ["audit", "orders", "payments", "refunds"]
    assert sub.partitions["refunds"] == 2 and "source.refunds" in kafka["target"].topics
    assert {"list_topics", "list_offsets"} <= {request for request, _ in collector_on}
    assert len(collector_on) > 5  # the ids, the replica, the limits too
    assert [request for request, on in collector_on if on] == []
    assert gc.isenabled()


def test_a_look_whose_admin_clients_no_longer_hear_the_clusters_gets_new_ones(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Seen in CI: after two source restarts one worker's looks failed for 90 s ("Failed to get metadata: Local:
    Broker transport failure") while the other worker's looked on; it never saw its topic created again, so it
    never copied it. Looks that fail LOOK_FAILURES_RENEW times in a row get new admin clients."""
    from replicator.errors import ClusterError
    from replicator.worker.subscription import LOOK_FAILURES_RENEW

    caplog.set_level(logging.INFO, logger="replicator.worker.subscription")
    sub = subscription(kafka)
    sub.refresh()
    for admin in kafka.admins["worker"]:
        admin.deaf = True
    kafka["source"].delete_topic("payments")
    for _ in range(LOOK_FAILURES_RENEW):
        with pytest.raises(ClusterError, match="Broker transport failure"):
            sub.refresh()
    assert sub.refresh() == ["orders"]
    assert sub.partitions == {"orders": 2}
    assert any(f"topic refresh failed {LOOK_FAILURES_RENEW} times in a row" in m for m in messages(caplog))
