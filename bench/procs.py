"""Child processes, Kafka tools and offsets: the bench's plumbing."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition  # noqa: E402

from replicator.jars import kafka_classpath  # noqa: E402

POLL_S = 0.2
CLK_TCK = os.sysconf("SC_CLK_TCK")
START = time.monotonic()


class StepFailed(Exception):
    """A step timed out, stalled or failed; the message names it."""


def progress(message: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {message}", flush=True)


# -- processes -------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float | None:
    """utime+stime of the process (all its threads, live and finished) and of its children it waited for (a
    worker asks its group what it gave it in a child process every minute), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15]) / CLK_TCK  # fields 14-17 of stat(5): utime, stime, cutime, cstime


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Per live thread of the process: its name (comm: librdkafka's ``rdk:broker1``, a JVM's thread names)
    and its utime+stime in seconds."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return threads


def rss_mib(pid: int) -> float | None:
    """Resident set size of the process (VmRSS of /proc/<pid>/status), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        return None
    return None


class Child:
    """A child process with its output in a log file; stopped on the way out, always."""

    running: ClassVar[list[Child]] = []

    def __init__(self, name: str, args: list[str], log: Path, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        """Start ``args``; ``env`` adds to (or overrides) this process's environment."""
        self.name, self.log = name, log
        self._out = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(args, stdout=self._out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=cwd,
                                        env=None if env is None else {**os.environ, **env})
        Child.running.append(self)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pids(self) -> list[int]:
        return [self.process.pid]

    def alive(self) -> bool:
        return self.process.poll() is None

    def check_alive(self, step: str) -> None:
        if not self.alive():
            raise StepFailed(f"{step}: {self.name} exited with code {self.process.returncode}; "
                             f"last lines of {self.log}:\n{self.tail()}")

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                progress(f"{self.name} did not stop in {timeout:.0f} s, killing it")
                self.process.kill()
                self.process.wait(10)
        self._out.close()
        if self in Child.running:
            Child.running.remove(self)
        return self.process.returncode


class Children:
    """Several processes of one peer (a route's workers) watched and stopped as one."""

    def __init__(self, name: str, children: list[Child]) -> None:
        if not children:
            raise ValueError(f"{name}: no process")
        self.name, self.children = name, children
        self.log = children[0].log

    @property
    def pids(self) -> list[int]:
        return [child.pid for child in self.children]

    def check_alive(self, step: str) -> None:
        for child in self.children:
            child.check_alive(step)

    def stop(self, timeout: float = 30) -> int | None:
        """Stop every process; the first non-zero exit code, else 0."""
        codes = [child.stop(timeout) for child in self.children]
        return next((code for code in codes if code), codes[0])


def cpu_total(pids: list[int]) -> float | None:
    """``cpu_seconds`` summed over processes (None when one cannot be read)."""
    values = [cpu_seconds(pid) for pid in pids]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def java(main_class: str, *args: str, heap: str = "512m") -> list[str]:
    return ["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", "-cp", kafka_classpath(), main_class, *args]


def run_tool(name: str, args: list[str], log: Path, timeout: float) -> str:
    """Run a Kafka tool to completion (bounded); returns its output."""
    child = Child(name, args, log)
    try:
        child.process.wait(timeout)
    except subprocess.TimeoutExpired:
        child.stop(5)
        raise StepFailed(f"{name}: no result after {timeout:.0f} s; see {log}") from None
    child.stop()
    output = log.read_text(errors="replace")
    if child.process.returncode != 0:
        raise StepFailed(f"{name}: exit code {child.process.returncode}; last lines:\n{child.tail()}")
    return output


# -- Kafka helpers ---------------------------------------------------------------------

class Offsets:
    """Sum of a topic's end offsets, read fresh from the broker (no cache)."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks",
                                  "enable.auto.commit": "false"})

    def partitions(self, topic: str) -> int:
        try:
            meta = self.consumer.list_topics(topic, timeout=2.0).topics.get(topic)
        except KafkaException:
            return 0
        return 0 if meta is None or meta.error is not None else len(meta.partitions)

    def total(self, topic: str) -> int:
        count = self.partitions(topic)
        total = 0
        for p in range(count):
            try:
                total += self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=2.0,
                                                             cached=False)[1]
            except KafkaException:
                pass
        return total

    def close(self) -> None:
        self.consumer.close()


class RecordCounter:
    """Records of a topic as a read_committed consumer sees them, counted as they come (a thread of its own):
    a target written in transactions has a marker after each transaction, which end offsets would count."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.count = 0
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-record-counter",
                                   "enable.auto.commit": "false", "isolation.level": "read_committed",
                                   "fetch.max.bytes": str(64 * 1024 * 1024)})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"count-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.count += sum(1 for m in self._consumer.consume(10_000, 0.2) if m.error() is None)
            except KafkaException:
                time.sleep(0.2)  # the topic is not there yet

    def total(self, _topic: str) -> int:
        """Records counted so far (the topic is the one given at the start)."""
        return self.count

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


def bench_parser(doc: str | None, quick: str | None = None) -> argparse.ArgumentParser:
    """The options every bench has: its description (the first paragraph of ``doc``), ``--quick`` (``quick``
    says what it runs; None: the bench has no quick form), ``--report`` and ``--keep``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    if quick is not None:
        parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--report", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, cluster data)")
    return parser


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]



def exit_code(work: Path, failed: bool, keep: bool) -> int:
    """The end of a bench run: its temp dir kept (and named) when a step failed or ``--keep``, else
    removed; exit 1 when a step failed."""
    if failed or keep:
        print(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def create_topics(bootstrap: str, partitions: dict[str, int], batch: int = 100) -> float:
    """Create each topic with its partition count, ``batch`` per request (replicator.kafka.admin's, which
    takes "already exists" as done); returns the seconds it took."""
    from replicator.kafka.admin import admin_client
    from replicator.kafka.admin import create_topics as create

    admin = admin_client(bootstrap)
    started = time.monotonic()
    names = list(partitions)
    for start in range(0, len(names), batch):
        create(admin, {n: partitions[n] for n in names[start:start + batch]}, timeout=60)
        if len(names) > batch:
            progress(f"  created {min(start + batch, len(names)):,}/{len(names):,} topics")
    return time.monotonic() - started


def run_bench(work: Path, report: dict[str, Any], body: Callable[[], None], tear_down: Callable[[], None],
              step_failed: Callable[[], bool], summary: Callable[[], str | None], keep: bool,
              report_path: Path | None) -> int:
    """Run a bench's ``body`` (SIGTERM and Ctrl-C clean up too), then ``tear_down``; print ``summary()``,
    write the report, keep or remove ``work``. Exit 1 when the body raised or ``step_failed()``."""
    def on_sigterm(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.monotonic()
    failed = False
    try:
        body()
    except KeyboardInterrupt:
        progress("interrupted: cleaning up")
        failed = True
    except Exception as exc:  # noqa: BLE001 - reported, then cleaned up
        progress(f"FAILED: {type(exc).__name__}: {exc}")
        report["error"] = f"{type(exc).__name__}: {exc}"
        failed = True
    finally:
        tear_down()
    report["wall_s"] = round(time.monotonic() - started, 1)
    failed |= step_failed()
    shown = summary()
    if shown is not None:
        print(shown)
    if report_path is not None:
        report_path.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nreport: {report_path}")
    return exit_code(work, failed, keep)



def start_clusters(work: Path, report: dict[str, Any]) -> tuple[str, str]:
    """Two fresh single-node KRaft clusters (source, target; 1 GiB heap each) on free loopback ports, kept in
    ``report["_clusters"]`` for :func:`tear_down`; returns their bootstrap servers."""
    from tests.support import free_port, start_pair

    ports = {"source": free_port(), "target": free_port()}
    while ports["target"] in (ports["source"], ports["source"] + 1) or ports["source"] == ports["target"] + 1:
        ports["target"] = free_port()
    progress(f"starting clusters source=127.0.0.1:{ports['source']} target=127.0.0.1:{ports['target']} (heap 1g)")
    report["_clusters"] = start_pair(work / "clusters", ports, heap="1g")
    source, target = (c.spec.bootstrap_servers for c in report["_clusters"])
    return source, target


def tear_down(report: dict[str, Any]) -> None:
    """Stop what a bench started, newest first: its load (``report["_load"]``), every child process still
    running, its clusters (``report["_clusters"]``); the keys are taken out of the report."""
    load = report.pop("_load", None)
    if load is not None:
        load.stop()
    for child in list(Child.running):
        child.stop(20)
    for cluster in report.pop("_clusters", []):
        try:
            cluster.stop()
        except Exception as exc:  # noqa: BLE001 - the others are still stopped
            progress(f"could not stop cluster {cluster.spec.name}: {exc}")
    progress("clusters stopped")
