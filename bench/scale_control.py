"""The scale bench's MirrorFlow-only parts: many consumer groups checkpointed, and the control plane's
commands (status, sync --dry-run, the Replication page) timed at that size."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from peers import REPO, mirrorflow_cli
from procs import StepFailed, progress

from replicator.kafka.log_ranges import ends

GROUP_PREFIX = "scale-g"
COMMIT_THREADS = 8
COMMAND_TIMEOUT_S = 900.0


def commit_groups(bootstrap: str, groups: int, partitions: list[TopicPartition]) -> dict[str, Any]:
    """Commit ``partitions`` (offsets set) for ``groups`` groups ``scale-g0000``..., a consumer per group
    that never subscribes (so never joins), several at once."""
    names = [f"{GROUP_PREFIX}{i:04d}" for i in range(groups)]

    def commit(group: str) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": "false"})
        try:
            consumer.commit(offsets=partitions, asynchronous=False)
        finally:
            consumer.close()

    started = time.monotonic()
    with ThreadPoolExecutor(COMMIT_THREADS) as pool:
        for done, _ in enumerate(pool.map(commit, names), 1):
            if done % 250 == 0:
                progress(f"  committed {done:,}/{groups:,} groups")
    seconds = time.monotonic() - started
    progress(f"  {groups:,} groups committed on {len(partitions)} partitions in {seconds:.1f} s")
    return {"groups": groups, "partitions_per_group": len(partitions), "commit_s": round(seconds, 2)}


def end_offsets(bootstrap: str, topics: list[str], partitions: int) -> list[TopicPartition]:
    """The source end offsets of ``topics`` (to commit as the groups' positions)."""
    asked = [(t, p) for t in topics for p in range(partitions)]
    found = ends(AdminClient({"bootstrap.servers": bootstrap}), bootstrap, asked)
    return [TopicPartition(t, p, found[(t, p)]) for t, p in asked]


def timed_cli_runs(work: Path, name: str, args: list[str], runs: int) -> dict[str, Any]:
    """``timed_cli`` ``runs`` times one after the other: the last run's result, with every run's seconds
    (``runs_s``), their median as ``wall_s``, and the first failing exit code if any failed."""
    results = [timed_cli(work, name, args) for _ in range(runs)]
    seconds = sorted(r["wall_s"] for r in results)
    failed = [r["exit_code"] for r in results if r["exit_code"] != 0]
    return {**results[-1], "wall_s": seconds[len(seconds) // 2], "runs_s": [r["wall_s"] for r in results],
            "exit_code": failed[0] if failed else 0}


def timed_cli(work: Path, name: str, args: list[str]) -> dict[str, Any]:
    """Run ``mirrorflow <args>`` of this checkout to completion; wall seconds, exit code, what it printed."""
    log = work / f"cli-{name}.log"
    started = time.monotonic()
    try:
        done = subprocess.run([*mirrorflow_cli(), *args], capture_output=True, text=True, cwd=work,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StepFailed(f"mirrorflow {name}: no result after {COMMAND_TIMEOUT_S:.0f} s") from exc
    seconds = time.monotonic() - started
    log.write_text(done.stdout + done.stderr)
    lines = done.stdout.splitlines()
    result: dict[str, Any] = {
        "command": "mirrorflow " + " ".join(args), "wall_s": round(seconds, 2), "exit_code": done.returncode,
        "stdout_lines": len(lines), "first_line": lines[0] if lines else "",
        "stderr_tail": done.stderr.strip().splitlines()[-5:], "log": str(log)}
    progress(f"  mirrorflow {name}: {seconds:.1f} s, exit {done.returncode}, {len(lines):,} lines"
             + (f"; {lines[0][:120]}" if lines else "")
             + (f"; stderr: {result['stderr_tail'][-1][:200]}" if result["stderr_tail"] else ""))
    return result


def page_probe(work: Path, state_url: str, route: str) -> dict[str, Any]:
    """One GET of the Replication page and one of its JSON (bench/scale_page.py in its own process)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_HOME": str(work / "airflow"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    started = time.monotonic()
    try:
        done = subprocess.run([*mirrorflow_cli()[:1], str(REPO / "bench" / "scale_page.py"), state_url, route],
                              capture_output=True, text=True, cwd=work, env=env, timeout=COMMAND_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise StepFailed(f"replication page: no answer after {COMMAND_TIMEOUT_S:.0f} s") from exc
    (work / "page-probe.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not done.stdout.strip():
        raise StepFailed(f"replication page probe: exit {done.returncode}; see {work / 'page-probe.log'}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = round(time.monotonic() - started, 2)
    progress(f"  replication page: HTML {result['page']['status']} in {result['page']['seconds']:.2f} s "
             f"({result['page']['bytes']:,} B), JSON {result['json']['status']} in {result['json']['seconds']:.2f} s "
             f"({result['json']['bytes']:,} B); Airflow import {result['import_s']:.1f} s")
    return result


# MirrorMaker 2's checkpoints of the same groups: its checkpoint connector lists the groups and emits a
# checkpoint per (group, partition) to <alias>.checkpoints.internal on the target, every interval.
MM2_CHECKPOINTS = {"emit.checkpoints.enabled": "true", "emit.checkpoints.interval.seconds": "5",
                   "refresh.groups.enabled": "true", "refresh.groups.interval.seconds": "5",
                   "groups": f"{GROUP_PREFIX}.*"}


def first_complete_s(first_seen: dict[bytes, int], expected: int, launched_ms: int) -> float | None:
    """Seconds from launch until ``expected`` distinct checkpoints had appeared (each counted at its first
    record's timestamp, ms); None while fewer have."""
    if expected <= 0 or len(first_seen) < expected:
        return None
    return (sorted(first_seen.values())[expected - 1] - launched_ms) / 1000


def watch_checkpoints(bootstrap: str, topic: str, expected: int, launched_ms: int, timeout: float,
                      alive: Any) -> dict[str, Any]:
    """Read ``topic`` (one partition) until ``expected`` distinct checkpoint keys (group, topic, partition) are
    there or ``timeout`` s pass; ``alive()`` raises when the peer died. When the set was complete, and how
    many were seen."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-checkpoints-reader",
                         "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    first_seen: dict[bytes, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(first_seen) < expected and time.monotonic() < deadline:
            alive()
            for message in consumer.consume(5000, 1.0):
                key = message.key()
                if message.error() is None and key is not None:
                    first_seen.setdefault(key, message.timestamp()[1])
    finally:
        consumer.close()
    seconds = first_complete_s(first_seen, expected, launched_ms)
    progress(f"  MirrorMaker 2 checkpoints: {len(first_seen):,} of {expected:,}"
             + (f", all {seconds:.1f} s after launch" if seconds is not None else f" after {timeout:.0f} s"))
    return {"expected": expected, "seen": len(first_seen), "complete_s": None if seconds is None else round(seconds, 1)}
