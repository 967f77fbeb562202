"""The state database (PostgreSQL) stopped under a worker: records keep arriving; a start waits for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replicator.dev.localpostgres import LocalPostgres, pg_bin
from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, end_offsets, produce, read_all, total, wait_until
from tests.records import by_partition, make_records, write_config
from tests.support import Worker, free_port

pytestmark = pytest.mark.postgres

AWAY, BACK = "state database unavailable", "state database answers again"
WAITING, ANSWERS = "state database not answering", "state database answers, routes start"
PARTITIONS = 2


@pytest.fixture
def postgres() -> Iterator[LocalPostgres]:
    """A PostgreSQL server of this test alone (it is stopped and started again)."""
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed here (no initdb)")
    server = LocalPostgres(bindir, free_port())
    try:
        server.start()
        yield server
    finally:
        server.remove()


def _start_worker(primary, backup, topic: str, postgres: LocalPostgres, tmp_path, workers) -> Worker:  # type: ignore[no-untyped-def]
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers,
                          [{"name": "p2b", "source": "primary", "target": "backup", "topics": [topic]}],
                          state_url=postgres.url)
    workers.append(Worker(config, log_dir=tmp_path))
    return workers[-1]


def _copied(backup, topic: str, records: list[Rec]) -> None:  # type: ignore[no-untyped-def]
    remote = f"primary.{topic}"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, remote, PARTITIONS)) >= len(records), 90,
               f"{len(records)} records on {remote}")


def test_copying_goes_on_while_the_state_database_is_down(primary, backup, unique_name, tmp_path, workers,  # type: ignore[no-untyped-def]
                                                          postgres) -> None:
    create_topics(primary.bootstrap_servers, {unique_name: PARTITIONS})
    worker = _start_worker(primary, backup, unique_name, postgres, tmp_path, workers)
    sent = make_records(PARTITIONS, 400, "before")
    produce(primary.bootstrap_servers, unique_name, sent)
    _copied(backup, unique_name, sent)

    postgres.stop()
    wait_until(lambda: AWAY in worker.output(), 60, "the worker to notice the outage")
    during = make_records(PARTITIONS, 400, "during")
    produce(primary.bootstrap_servers, unique_name, during)
    sent += during
    _copied(backup, unique_name, sent)
    assert not postgres.running()  # these records arrived while the database was down

    postgres.start()
    wait_until(lambda: BACK in worker.output(), 60, "the worker to see the database again")
    after = make_records(PARTITIONS, 400, "after")
    produce(primary.bootstrap_servers, unique_name, after)
    sent += after
    _copied(backup, unique_name, sent)

    assert read_all(backup.bootstrap_servers, f"primary.{unique_name}", PARTITIONS) == by_partition(sent, PARTITIONS)
    out = worker.output()
    assert worker.process.poll() is None, out[-3000:]
    assert out.count(AWAY) == 1 and out.count(BACK) == 1, out[-3000:]
    code, _ = worker.terminate()
    assert code == 0, worker.output()[-3000:]


def test_a_worker_started_while_the_state_database_is_down_copies_once_it_is_back(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers, postgres) -> None:
    postgres.stop()
    sent = make_records(PARTITIONS, 300, "waiting")
    create_topics(primary.bootstrap_servers, {unique_name: PARTITIONS})
    produce(primary.bootstrap_servers, unique_name, sent)
    worker = _start_worker(primary, backup, unique_name, postgres, tmp_path, workers)
    wait_until(lambda: WAITING in worker.output(), 60, "the worker to say it waits for the database")
    assert "route starting" not in worker.output()  # it waits before anything starts

    postgres.start()
    wait_until(lambda: ANSWERS in worker.output(), 60, "the worker to see the database")
    _copied(backup, unique_name, sent)
    assert read_all(backup.bootstrap_servers, f"primary.{unique_name}", PARTITIONS) == by_partition(sent, PARTITIONS)
    out = worker.output()
    assert out.count(WAITING) == 1 and out.count(ANSWERS) == 1, out[-3000:]
    code, _ = worker.terminate()
    assert code == 0, worker.output()[-3000:]
