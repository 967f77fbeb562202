"""`mirrorflow run`'s copy loops start in an interpreter tuned for them: start-up's heap out of the cycle
collector's reach, and a fine GIL switch interval."""

from __future__ import annotations

import argparse
import gc
import sys
import threading
from pathlib import Path

import pytest

from replicator.cli import run_cmd
from replicator.worker.interpreter import LOOP_SWITCH_INTERVAL_S


class _Store:
    def close(self) -> None:
        pass


def test_the_copy_loops_start_with_start_ups_heap_frozen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by bench/refresh_stall.py: full collections scanned the whole start-up heap (modules, config,
    clients) several times a minute at 2,000 topics, each holding the copy loop 60-165 ms."""
    seen: dict[str, float] = {}

    class _Worker:
        def __init__(self, config: object, route: object, store: object, worker_id: str | None = None,
                     timeouts: object = None) -> None:
            self.route = route

        def run(self, stop: threading.Event) -> None:
            seen["frozen"], seen["interval"] = gc.get_freeze_count(), sys.getswitchinterval()

    config = tmp_path / "mirrorflow.yaml"
    config.write_text("clusters:\n  a: {bootstrap.servers: '127.0.0.1:1'}\n  b: {bootstrap.servers: '127.0.0.1:2'}\n"
                      "routes: [{name: r, source: a, target: b, topics: [t]}]\n"
                      f"state: {{url: 'sqlite:///{tmp_path / 'state.db'}'}}\n")
    monkeypatch.setattr(run_cmd, "_start", lambda *_: (_Store(), {"r": None}))
    monkeypatch.setattr(run_cmd, "worker_for", lambda _route: _Worker)
    interval = sys.getswitchinterval()
    try:
        assert run_cmd.run_routes(argparse.Namespace(config=str(config), route=None, worker_id=None,
                                                     metrics_port=None)) == 0
    finally:
        gc.unfreeze()
        sys.setswitchinterval(interval)
    assert seen["frozen"] > 10_000  # every module's functions and classes, at least
    assert seen["interval"] == LOOP_SWITCH_INTERVAL_S
