"""The scale bench's reading of py-spy's raw output (pure)."""

from __future__ import annotations

from bench.scale_profile import loop_hotspots

LOOP = ("thread (11): route-r;Thread.run (threading.py:982);RouteWorker.run (replicator/worker/route_worker.py:148);"
        "RouteWorker._loop (replicator/worker/route_worker.py:{line})")
RAW = "\n".join([
    LOOP.format(line=174) + ";Subscription.apply (replicator/worker/subscription.py:148);"
    "StateLink.replicating (replicator/state/route_link.py:92);Session.execute (sqlalchemy/orm/session.py:1) 30",
    LOOP.format(line=184) + ";GroupMember._consume (replicator/worker/group_member.py:94) 10",
    "thread (12): topic-refresh-r;Subscription._look (replicator/worker/subscription.py:170) 99",
    "not a stack line",
])


def test_busiest_loop_paths_only_of_the_loop_thread() -> None:
    total, paths = loop_hotspots(RAW)
    assert total == 40
    assert paths == [
        (30, "RouteWorker._loop:174 > Subscription.apply:148 > StateLink.replicating:92"),
        (10, "RouteWorker._loop:184 > GroupMember._consume:94"),
    ]


def test_no_loop_thread_no_paths() -> None:
    assert loop_hotspots("thread (12): other;f (x.py:1) 5") == (0, [])
