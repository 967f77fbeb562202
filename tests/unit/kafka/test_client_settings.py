"""The librdkafka settings a route's worker gets: the guarantees fixed, the user's own choices kept."""

from __future__ import annotations

from replicator.config import parse_config
from replicator.kafka.clients import consumer_settings, producer_settings

CONFIG = parse_config(
    "clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
    "routes: [{name: r, source: a, target: b, topics: [t],"
    " consumer: {client.id: billing-mirror, fetch.wait.max.ms: 10},"
    " producer: {linger.ms: 20}}]\n")
ROUTE = CONFIG.routes[0]


def test_the_consumer_keeps_the_users_choices_and_the_guarantees() -> None:
    settings = consumer_settings(CONFIG, ROUTE, "w-1")
    assert settings["client.id"] == "billing-mirror" and settings["fetch.wait.max.ms"] == "10"
    assert settings["group.id"] == "mirrorflow-r" and settings["group.instance.id"] == "w-1"
    assert settings["enable.auto.offset.store"] == "false" and settings["auto.offset.reset"] == "error"


def test_a_busy_partition_brings_half_a_mib_per_fetch_unless_the_route_says_more() -> None:
    """What a small topic's record may wait behind in the prefetch: half a MiB of each busy partition (bench/
    fairness.py); a route read over a long link raises it (docs/operations.md)."""
    assert consumer_settings(CONFIG, ROUTE, "w-1")["max.partition.fetch.bytes"] == str(512 * 1024)
    far = parse_config(
        "clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
        "routes: [{name: r, source: a, target: b, topics: [t], consumer: {max.partition.fetch.bytes: 4194304}}]\n")
    assert consumer_settings(far, far.routes[0], "w-1")["max.partition.fetch.bytes"] == "4194304"


def test_the_worker_commits_what_it_stored_itself_as_often_as_the_route_says() -> None:
    """librdkafka's auto-commit walks the whole assignment every interval, stored or not (10 % of a core at
    2,500 topics x 4 with nothing to copy): it is off, and ``auto.commit.interval.ms`` paces the worker's own
    commits (250 ms unless the route says otherwise)."""
    from replicator.kafka.clients import commit_interval

    assert consumer_settings(CONFIG, ROUTE, "w-1")["enable.auto.commit"] == "false"
    assert commit_interval(CONFIG, ROUTE) == 0.25
    slow = parse_config(
        "clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
        "routes: [{name: r, source: a, target: b, topics: [t], consumer: {auto.commit.interval.ms: 5000}}]\n")
    assert commit_interval(slow, slow.routes[0]) == 5.0
    from_cluster = parse_config(
        "clusters: {a: {bootstrap.servers: 'h:1', auto.commit.interval.ms: 1000}, b: {bootstrap.servers: 'h:2'}}\n"
        "routes: [{name: r, source: a, target: b, topics: [t]}]\n")
    assert commit_interval(from_cluster, from_cluster.routes[0]) == 1.0


def test_a_worker_without_an_id_is_a_dynamic_member() -> None:
    assert "group.instance.id" not in consumer_settings(CONFIG, ROUTE)


def test_the_producer_has_a_default_client_id_and_the_guarantees() -> None:
    settings = producer_settings(CONFIG, ROUTE)
    assert settings["client.id"] == "mirrorflow-r-producer" and settings["linger.ms"] == "20"
    assert (settings["acks"], settings["enable.idempotence"], settings["message.timeout.ms"]) == ("all", "true", "0")


EOS = parse_config(
    "clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
    "routes: [{name: r, source: a, target: b, topics: [t], guarantee: exactly-once,"
    " producer: {transaction.timeout.ms: 20000}}]\n")


def test_an_exactly_once_worker_commits_in_transactions_and_is_a_member_on_the_target() -> None:
    from replicator.kafka.clients import membership_settings

    route = EOS.routes[0]
    producer = producer_settings(EOS, route, "w-1")
    assert producer["transactional.id"] == "mirrorflow-r-w-1" and producer["transaction.timeout.ms"] == "20000"
    consumer = consumer_settings(EOS, route, "w-1")
    assert consumer["enable.auto.commit"] == "false" and "group.instance.id" not in consumer  # no member
    member = membership_settings(EOS, route, "w-1")
    assert (member["bootstrap.servers"], member["group.id"], member["group.instance.id"]) == \
        ("h:2", "mirrorflow-r.positions", "w-1")
    assert member["enable.auto.commit"] == "false" and member["isolation.level"] == "read_committed"


def test_an_at_least_once_producer_is_not_transactional() -> None:
    assert "transactional.id" not in producer_settings(CONFIG, ROUTE, "w-1")


def test_every_client_of_a_worker_finds_a_restarted_broker_within_a_second_unless_told_otherwise() -> None:
    """The fault harness: librdkafka's 10 s reconnect backoff held an exactly-once route 10 s after a target
    restart of 6 s. A user's own setting wins."""
    from replicator.kafka.clients import membership_settings

    route = EOS.routes[0]
    for settings in (consumer_settings(EOS, route, "w"), producer_settings(EOS, route, "w"),
                     membership_settings(EOS, route, "w"), producer_settings(CONFIG, ROUTE)):
        assert settings["reconnect.backoff.max.ms"] == "1000"
    slow = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                        "routes: [{name: r, source: a, target: b, topics: [t],"
                        " producer: {reconnect.backoff.max.ms: 5000}}]\n")
    assert producer_settings(slow, slow.routes[0])["reconnect.backoff.max.ms"] == "5000"


def test_a_partition_goes_serially_below_as_many_records_in_flight_as_the_producer_pipelines() -> None:
    """librdkafka's idempotent producer sends a partition's next batch while fewer of its records than
    max.in.flight.requests.per.connection (5 at most) are in flight; at 1 it never does, and nothing need wait."""
    from replicator.kafka.clients import serial_below

    def route(producer: str) -> int:
        config = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                              f"routes: [{{name: r, source: a, target: b, topics: [t]{producer}}}]\n")
        return serial_below(config, config.routes[0])

    assert route("") == 5
    assert route(", producer: {max.in.flight.requests.per.connection: 1}") == 1
    assert route(", producer: {max.in.flight: 3}") == 3
    assert route(", producer: {max.in.flight.requests.per.connection: 100}") == 5
