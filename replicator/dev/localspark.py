"""A Spark standalone cluster on loopback: a master and its workers, from the classes PySpark ships.

No download: ``pyspark`` (pip) carries Spark's jars and ``bin/spark-class``, which runs
``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` as plain JVMs. The
tests submit the audit and the backfill to it (``spark://127.0.0.1:PORT``) as a user
submits to a cluster of their own; the benchmarks compare it with ``local[2]``.
Everything lives in one folder::

    <home>/logs/master.log, worker-<n>.log    each daemon's output
    <home>/work/<app-id>/<executor-id>/       what each executor fetched (jars, py files) and its logs
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replicator.dev.process_tree import children_interruptible, stop_sessions
from replicator.errors import ClusterError

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 90.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The Spark distribution inside the installed ``pyspark`` (its ``bin/``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class LocalSparkSpec:
    """What the cluster looks like: the master's ports, how many workers and what each offers."""

    home: Path
    port: int  # the master's RPC port: spark://host:port
    webui_port: int  # the master's web UI and its JSON status (/json/)
    workers: int = 1
    worker_cores: int = 2
    worker_memory: str = "2g"
    host: str = "127.0.0.1"
    daemon_memory: str = "256m"  # heap of the master and worker daemons (Spark's default: 1g each)

    @property
    def master_url(self) -> str:
        """The URL a driver submits to."""
        return f"spark://{self.host}:{self.port}"

    @property
    def status_url(self) -> str:
        """The master's JSON status: workers, running and completed applications."""
        return f"http://{self.host}:{self.webui_port}/json/"


def daemon_commands(spec: LocalSparkSpec, home: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of the master, then each worker (pure)."""
    spark_class = str(home / "bin" / "spark-class")
    master = [spark_class, MASTER_CLASS, "--host", spec.host, "--port", str(spec.port),
              "--webui-port", str(spec.webui_port)]
    workers = [(f"worker-{n}", [spark_class, WORKER_CLASS, spec.master_url, "--host", spec.host,
                                "--webui-port", "0", "--cores", str(spec.worker_cores),
                                "--memory", spec.worker_memory, "--work-dir", str(spec.home / "work")])
               for n in range(1, spec.workers + 1)]
    return [("master", master), *workers]


class LocalSpark:
    """Start, inspect and stop one local standalone cluster."""

    def __init__(self, spec: LocalSparkSpec) -> None:
        self.spec = spec
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Launch the master, wait until it answers, then the workers, and wait until all registered."""
        home = spark_home()
        (self.spec.home / "logs").mkdir(parents=True, exist_ok=True)
        (self.spec.home / "work").mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        commands = daemon_commands(self.spec, home)
        self._launch(*commands[0], home)
        self._wait(lambda status: status.get("status") == "ALIVE", "the master to answer", deadline)
        for name, argv in commands[1:]:
            self._launch(name, argv, home)
        self._wait(lambda status: status.get("aliveworkers", 0) >= self.spec.workers,
                   f"{self.spec.workers} worker(s) to register", deadline)
        log.info("spark cluster started master=%s workers=%d", self.spec.master_url, self.spec.workers)

    def status(self) -> dict[str, Any]:
        """The master's JSON status (raises ClusterError when it does not answer)."""
        try:
            with urllib.request.urlopen(self.spec.status_url, timeout=5) as answer:
                data: dict[str, Any] = json.load(answer)
                return data
        except (OSError, ValueError) as exc:
            raise ClusterError(f"spark master {self.spec.master_url}: no status at {self.spec.status_url}: {exc}",
                               retriable=True) from None

    def applications(self) -> list[dict[str, Any]]:
        """Every application the master ran or runs (name, id, state, cores, ...), oldest first."""
        status = self.status()
        return [*status.get("completedapps", []), *status.get("activeapps", [])]

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The folders of an application's executors: what each fetched from the driver."""
        return sorted(p for p in (self.spec.home / "work" / app_id).glob("*") if p.is_dir())

    def stop(self) -> None:
        """Stop the daemons and everything they started (executors, their Python workers): SIGINT, which runs
        each JVM's shutdown hooks, then SIGTERM and SIGKILL for what is left."""
        sessions = {p.pid for p in self._processes.values() if p.poll() is None}
        left = stop_sessions([sessions], set(), 15.0, 5.0) if sessions else set()
        for process in self._processes.values():
            process.poll()  # collect the exit status: no zombie
        if left:
            log.warning("spark processes left running pids=%s", sorted(left))
        self._processes.clear()

    def _launch(self, name: str, argv: list[str], home: Path) -> None:
        environ = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": self.spec.host,
                   "SPARK_LOG_DIR": str(self.spec.home / "logs"), "SPARK_DAEMON_MEMORY": self.spec.daemon_memory,
                   "SPARK_NO_DAEMONIZE": "1"}
        children_interruptible()  # stop() interrupts them first
        with open(self.spec.home / "logs" / f"{name}.log", "ab") as out:
            self._processes[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                                     stderr=subprocess.STDOUT, env=environ, cwd=self.spec.home,
                                                     start_new_session=True)

    def _wait(self, ready: Any, what: str, deadline: float) -> None:
        while True:
            dead = [name for name, p in self._processes.items() if p.poll() is not None]
            if dead:
                raise ClusterError(f"spark cluster: {', '.join(dead)} exited during start-up; see "
                                   f"{self.spec.home / 'logs'}")
            try:
                if ready(self.status()):
                    return
            except ClusterError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"spark cluster: timed out waiting for {what}; see {self.spec.home / 'logs'}",
                                   retriable=True)
            time.sleep(0.5)
