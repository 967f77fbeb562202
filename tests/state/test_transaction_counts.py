"""The transactions an exactly-once route's workers committed and aborted, as `mirrorflow status` reads them:
each worker process stores its counts as they stand; a route's totals sum every run of every worker."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from replicator.state.route_link import StateLink
from replicator.state.store import StateStore
from replicator.state.transaction_counts import RunCounts, TransactionTotals, save_counts, totals
from tests.state.test_state_link import ROUTE, outage

T0 = dt.datetime(2026, 11, 27, 1, 0, tzinfo=dt.UTC)


def counts(run: str, committed: int, aborted: int, route: str = "r", minutes: int = 0) -> RunCounts:
    return RunCounts(run, route, f"worker-{run}", committed, aborted, T0 + dt.timedelta(minutes=minutes),
                     T0 + dt.timedelta(minutes=minutes + committed))


@pytest.fixture
def store(state_url: str) -> Iterator[StateStore]:
    with StateStore(state_url + ("?timeout=0.1" if state_url.startswith("sqlite") else "")) as opened:
        yield opened


def test_a_route_sums_every_run_of_every_worker_and_a_repeated_or_late_write_counts_once(store: StateStore) -> None:
    store.run(lambda session: save_counts(session, counts("a1", 10, 1)))
    store.run(lambda session: save_counts(session, counts("a1", 25, 2)))  # the same run, later
    store.run(lambda session: save_counts(session, counts("a1", 25, 2)))  # stored twice (its answer was lost)
    store.run(lambda session: save_counts(session, counts("a1", 20, 2)))  # an older write arriving late
    store.run(lambda session: save_counts(session, counts("b1", 7, 0, minutes=-5)))  # another worker, earlier
    store.run(lambda session: save_counts(session, counts("a2", 3, 4, minutes=30)))  # worker a restarted
    store.run(lambda session: save_counts(session, counts("x1", 99, 99, route="other")))
    assert store.run(lambda session: totals(session, "r")) == TransactionTotals(35, 6, T0 - dt.timedelta(minutes=5))
    assert store.run(lambda session: totals(session, "never")) == TransactionTotals(0, 0, None)


def test_counts_found_while_the_database_is_away_are_stored_as_they_stand_once_it_answers(
        store: StateStore) -> None:
    link = StateLink(ROUTE, store, retry_seconds=0)
    link.transactions(counts("a1", 1, 0))
    assert store.run(lambda session: totals(session, "r")) == TransactionTotals(0, 0, None)  # not by the loop
    with outage(store):
        for committed in range(2, 50):
            link.transactions(counts("a1", committed, 0))
            if committed % 10 == 0:
                assert link.transaction_totals() is None  # a read (the topic refresh's) while away
        assert len(link._kept) == 1  # only the counts as they stand wait, not a write each
    assert link.transaction_totals() == TransactionTotals(49, 0, T0)  # the next read stores them first
    link.transactions(counts("a1", 60, 2))
    link.close()  # a worker that stops stores its last counts
    assert store.run(lambda session: totals(session, "r")) == TransactionTotals(60, 2, T0)
