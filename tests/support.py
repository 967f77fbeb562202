"""Helpers of the test suite (no fixtures here: see conftest.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from replicator.dev import ports
from replicator.dev.localcluster import LocalCluster, LocalClusterSpec


def free_port() -> int:
    """A loopback port that is free, and whose next port (the controller's) is free too; both reserved for this
    process, so test processes side by side never start two servers on one port."""
    return ports.free_port(pair=True)


def start_pair(home: Path, ports: Mapping[str, int], **options: object) -> list[LocalCluster]:
    """Start one local cluster per name (in parallel) under ``home``; returns them running."""
    clusters = [
        LocalCluster(
            LocalClusterSpec(name=name, home=home / name, port=port, controller_port=port + 1, **options)  # type: ignore[arg-type]
        )
        for name, port in ports.items()
    ]
    try:
        with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
            list(pool.map(LocalCluster.start, clusters))
    except BaseException:
        for cluster in clusters:  # never leave a broker behind a failed start
            cluster.stop()
        raise
    return clusters


@contextmanager
def own_pair(home: Path, heap: str = "384m") -> Iterator[tuple[LocalCluster, LocalCluster]]:
    """A source (``primary``) and a target (``backup``) of a test module's own, for tests that freeze, kill
    or fence things; stopped at the end (thawed first: a failed test may leave one frozen)."""
    import os
    import signal

    source, target = start_pair(home, {"primary": free_port(), "backup": free_port()}, heap=heap)
    try:
        yield source, target
    finally:
        for cluster in (source, target):
            pid = cluster.pid()
            if pid is not None:
                os.kill(pid, signal.SIGCONT)
            cluster.stop()


class Worker:
    """A ``mirrorflow run`` process, as an operator runs it (stderr kept in a file)."""

    def __init__(self, config: Path, *routes: str, log_dir: Path, extra: list[str] | None = None,
                 on: Callable[[list[str]], list[str]] | None = None) -> None:
        """``on``: how to run it elsewhere (``replicator.dev.hosts.Host.command``: on another host)."""
        import subprocess
        import sys

        self.log = log_dir / f"worker-{'-'.join(routes) or 'all'}-{id(self)}.log"
        args = [str(Path(sys.executable).parent / "mirrorflow"), "--log-level", "info", "run",
                "--config", str(config)]
        for route in routes:
            args += ["--route", route]
        args += extra or []
        self._out = open(self.log, "wb")  # noqa: SIM115 - closed in wait()
        self.process = subprocess.Popen(on(args) if on else args, stdout=self._out, stderr=subprocess.STDOUT)

    def terminate(self, timeout: float = 20) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds it took)."""
        import time

        began = time.monotonic()
        self.process.terminate()
        code = self.process.wait(timeout)
        self._out.close()
        return code, time.monotonic() - began

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or committed."""
        self.process.kill()
        self.process.wait(10)
        self._out.close()

    def output(self) -> str:
        """What the worker logged so far."""
        return self.log.read_text(errors="replace")


@contextmanager
def module_spark(app_name: str) -> Iterator[object]:
    """A test module's one local Spark session (the jobs find it active and reuse it), and at the end the driver
    JVM PySpark started for it: left idle it costs about 6 % of a core for the rest of the test process (the next
    module's session starts a JVM of its own)."""
    import logging

    from pyspark import SparkContext

    from spark_jobs.session import build_session

    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = build_session(app_name)
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        gateway, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
        if gateway is not None:
            gateway.shutdown()
            proc = getattr(gateway, "proc", None)
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()  # the JVM ends when its stdin does
                proc.wait(30)


@contextmanager
def sqlite_locked(path: Path | str) -> Iterator[None]:
    """Another connection holds a SQLite file exclusively (rollback journal: readers wait too)."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()
