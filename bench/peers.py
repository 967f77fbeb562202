"""Starting the two peers: MirrorFlow (`mirrorflow run`) and MirrorMaker 2 (its dedicated driver)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


from measure import Env  # noqa: E402
from procs import Child, Children  # noqa: E402

from replicator.jars import kafka_classpath  # noqa: E402

MF_SOURCE_ALIAS = "mfsource"  # MirrorFlow's name of the source cluster -> target prefix


def start_mirrorflow(env: Env, size: int | str, topics: list[str], *, metrics_port: int | None = None,
                     route: dict[str, Any] | None = None, alias: str = MF_SOURCE_ALIAS,
                     clusters: tuple[dict[str, str], dict[str, str]] | None = None, log: str | None = None,
                     worker_id: str | None = None) -> Child:
    """``mirrorflow run`` of this checkout (``python -m``, PYTHONPATH = the repo) on one route ``bench-<size>``;
    ``route`` adds settings to it (``checkpoints``, say); ``alias`` names the source cluster (the target prefix);
    ``clusters``: the source's and target's client properties (default: ``env``'s bootstrap servers); ``log``:
    the output's file name in the work dir (default ``mirrorflow-<size>.log``); ``worker_id``: its
    ``--worker-id``."""
    config = mirrorflow_config(env, size, topics, route, alias, clusters)
    metrics = ["--metrics-port", str(metrics_port)] if metrics_port else []
    worker = ["--worker-id", worker_id] if worker_id else []
    return Child(f"mirrorflow run{f' {worker_id}' if worker_id else ''}",
                 [*mirrorflow_cli(), "--log-level", "info", "run", "--config", str(config), "--route", f"bench-{size}",
                  *metrics, *worker],
                 env.work / (log or f"mirrorflow-{size}.log"), cwd=env.work, env={"PYTHONPATH": str(REPO)})


def start_mirrorflow_workers(env: Env, size: int | str, topics: list[str], workers: int, *,
                             alias: str = MF_SOURCE_ALIAS, route: dict[str, Any] | None = None) -> Children:
    """``workers`` processes of route ``bench-<size>`` on this host (``--worker-id`` w1..wN: one group, the
    partitions shared), each with its own clients: a producer, and so connections, of its own."""
    return Children(f"mirrorflow run x{workers}", [
        start_mirrorflow(env, size, topics, route=route, alias=alias, log=f"mirrorflow-{size}-w{i}.log",
                         worker_id=f"w{i}")
        for i in range(1, workers + 1)])


def mirrorflow_config(env: Env, size: int | str, topics: list[str], route: dict[str, Any] | None = None,
                      alias: str = MF_SOURCE_ALIAS,
                      clusters: tuple[dict[str, str], dict[str, str]] | None = None) -> Path:
    """The config of route ``bench-<size>`` (JSON is YAML), with its SQLite state DB; returns its path."""
    config = env.work / f"mirrorflow-{size}.yaml"
    source, target = clusters or ({"bootstrap.servers": env.source}, {"bootstrap.servers": env.target})
    config.write_text(json.dumps({
        "clusters": {alias: source, "target": target},
        "routes": [{"name": f"bench-{size}", "source": alias, "target": "target", "topics": topics,
                    **(route or {})}],
        "state": {"url": f"sqlite:///{env.work / f'state-{size}.db'}"},
    }))
    return config


def mirrorflow_cli() -> list[str]:
    """The command line of this checkout's CLI (the venv's ``mirrorflow`` script may import another checkout)."""
    return [str(REPO / ".venv" / "bin" / "python"), "-m", "replicator.cli.main"]


MM2_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
"""


def start_mm2(env: Env, size: int | str, topics: list[str], *, regex: bool = False, alias: str = "source",
              extra: dict[str, str] | None = None) -> Child:
    """MM2's dedicated driver copying ``topics`` (names, or regexes with ``regex``) from source to target;
    ``alias`` names the source cluster (MM2's target prefix); ``extra``: more MM2 properties."""
    tag = f"bench{size}"
    props = {
        "clusters": f"{alias}, target",
        f"{alias}.bootstrap.servers": env.source,
        "target.bootstrap.servers": env.target,
        f"{alias}->target.enabled": "true",
        f"{alias}->target.topics": ", ".join(t if regex else re.escape(t) for t in topics),
        f"target->{alias}.enabled": "false",
        # single-node clusters: every topic MM2 creates has one replica
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # fresh Connect state per run (worker group and internal topics live on the target)
        "target.group.id": f"mm2-{tag}",
        "offset.storage.topic": f"mm2-offsets-{tag}.internal",
        "config.storage.topic": f"mm2-configs-{tag}.internal",
        "status.storage.topic": f"mm2-status-{tag}.internal",
        # only the data copy (and its offset syncs, as MirrorFlow writes its own)
        "emit.checkpoints.enabled": "false",
        "emit.heartbeats.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.groups.enabled": "false",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        # the same delivery guarantee as MirrorFlow's producer (the worker's producer.* = target.producer.*)
        "target.producer.acks": "all",
        "target.producer.enable.idempotence": "true",
        "tasks.max": "1",  # one task, as one MirrorFlow worker process is one route thread
        # what MM2's own start-up warning recommends (skips a ~13 s classpath scan per herder)
        "plugin.discovery": "service_load",
    }
    props |= extra or {}
    path = env.work / f"mm2-{size}.properties"
    path.write_text("".join(f"{k} = {v}\n" for k, v in props.items()))
    log4j = env.work / f"mm2-{size}-log4j2.properties"
    log4j.write_text(MM2_LOG4J.format(log=env.work / f"mm2-{size}-connect.log"))
    # Heap and GC as bin/connect-mirror-maker.sh + kafka-run-class.sh use them.
    args = ["java", "-Xms256m", "-Xmx2g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
            "-cp", kafka_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker", str(path)]
    return Child("MirrorMaker 2", args, env.work / f"mm2-{size}.out", cwd=env.work)
