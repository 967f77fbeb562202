"""for_each_group: the checkpoint and failover runbooks read and write many groups at once."""

from __future__ import annotations

import threading
import time

import pytest

from replicator.errors import ClusterError
from replicator.kafka.group_offsets import GROUPS_AT_ONCE, for_each_group


def test_every_group_once_with_its_result_in_the_groups_order() -> None:
    groups = [f"g{n}" for n in range(50)] + ["g3"]  # a name twice is read once
    done: list[str] = []
    lock = threading.Lock()

    def work(group: str) -> int:
        time.sleep(0.001 * (hash(group) % 5))  # finish out of order
        with lock:
            done.append(group)
        return int(group[1:])

    results = for_each_group(work, groups)
    assert list(results) == [f"g{n}" for n in range(50)]
    assert results == {f"g{n}": n for n in range(50)}
    assert sorted(done) == sorted(results)


def test_groups_run_several_at_once_and_never_more_than_the_bound() -> None:
    running, most = 0, 0
    lock = threading.Lock()
    all_started = threading.Barrier(GROUPS_AT_ONCE, timeout=10)

    def work(group: str) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if int(group) < GROUPS_AT_ONCE:
            all_started.wait()  # the first GROUPS_AT_ONCE groups must all run together, or this times out
        time.sleep(0.002)
        with lock:
            running -= 1

    for_each_group(work, [str(n) for n in range(4 * GROUPS_AT_ONCE)])
    assert most == GROUPS_AT_ONCE


def test_an_error_of_one_group_is_raised() -> None:
    def work(group: str) -> str:
        if group == "bad":
            raise ClusterError("target 'backup': committed offsets of group 'bad': GROUP_AUTHORIZATION_FAILED")
        return group

    with pytest.raises(ClusterError, match="group 'bad'"):
        for_each_group(work, ["a", "bad", "c"])
