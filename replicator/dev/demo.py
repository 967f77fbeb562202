"""Demo data: topics and records on the local primary cluster, so there is something to see."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from confluent_kafka import Producer

from replicator.config import Config
from replicator.errors import ClusterError
from replicator.kafka.admin import create_topics

DEMO_TOPICS: dict[str, int] = {"orders": 3, "payments.eu": 2, "payments.us": 2}
RECORDS_PER_TOPIC = 1000


def _demo_record(topic: str, n: int) -> tuple[bytes, bytes, list[tuple[str, str | bytes | None]]]:
    key = f"customer-{n % 50}".encode()
    value = json.dumps({"topic": topic, "seq": n, "amount_cents": (n * 37) % 10_000}).encode()
    return key, value, [("source", b"mirrorflow-demo"), ("seq", str(n).encode())]


def seed_demo_topics(
    client_properties: Mapping[str, str], progress: Callable[[str], None] = lambda _: None
) -> dict[str, int]:
    """Create the demo topics (if missing) and add RECORDS_PER_TOPIC records to each."""
    created = create_topics(client_properties, DEMO_TOPICS)
    producer = Producer(
        {**client_properties, "enable.idempotence": "true", "linger.ms": "20", "log_level": "3"}
    )
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    for topic in DEMO_TOPICS:
        for n in range(RECORDS_PER_TOPIC):
            key, value, headers = _demo_record(topic, n)
            producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered)
            producer.poll(0)
        verb = "created, " if topic in created else ""
        progress(f"{topic}: {verb}{RECORDS_PER_TOPIC} records produced")
    left = producer.flush(30)
    if left or failures:
        raise ClusterError(f"demo records not delivered: {left} pending, errors: {failures[:3]}")
    return {topic: RECORDS_PER_TOPIC for topic in DEMO_TOPICS}


def prepare_state(config: Config) -> list[str]:
    """Migrate the state DB and register the config's routes, as ``mirrorflow db upgrade`` does.

    Done before the demo starts its worker: the status it polls reads the route's rows,
    and the worker, a separate process, registers them only once it has started.
    """
    from replicator.state.repository import register_routes  # SQLAlchemy: only when needed
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            return register_routes(session, config.routes)
