"""An Apache Kafka (KRaft) node on loopback, run from Maven's jars: a cluster of its own, or one node of a
cluster of several (``broker_config.cluster_nodes``; each node is then started by its own ``LocalCluster``).

Used by ``mirrorflow dev`` and by the pytest fixtures alike. The broker runs as a
detached JVM process (it outlives the command that started it); everything about
it lives in one folder::

    <home>/server.properties   written from LocalClusterSpec
    <home>/log4j2.properties   broker logs go to <home>/logs/server.log
    <home>/data/               KRaft metadata and topic data (kept across stop/start)
    <home>/kafka.pid           the JVM's pid while it runs
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from replicator.dev.broker_config import LocalClusterSpec, TlsListener, new_cluster_id, server_properties
from replicator.errors import ClusterError
from replicator.jars import kafka_classpath

__all__ = ["ClusterStatus", "LocalCluster", "LocalClusterSpec", "TlsListener", "new_cluster_id", "server_properties"]

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 60.0
SHUTDOWN_TIMEOUT_S = 30.0

_LOG4J2 = """\
status = error
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {logs}/server.log
appender.file.filePattern = {logs}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """What ``dev status`` shows of one local cluster."""

    name: str
    bootstrap_servers: str
    cluster_id: str | None
    pid: int | None
    running: bool
    home: str
    topics: tuple[str, ...] = ()


class LocalCluster:
    """Start, stop and inspect one local single-node KRaft cluster."""

    def __init__(self, spec: LocalClusterSpec) -> None:
        # Absolute: the JVM runs in its own folder, and the pid check matches this path.
        self.spec = dataclasses.replace(spec, home=spec.home.resolve())
        self._home = self.spec.home
        self._process: subprocess.Popen[bytes] | None = None  # set when this object launched it

    @property
    def _pid_file(self) -> Path:
        return self._home / "kafka.pid"

    @property
    def _properties_file(self) -> Path:
        return self._home / "server.properties"

    @property
    def log_file(self) -> Path:
        """The broker's own log (INFO), for when something goes wrong."""
        return self._home / "logs" / "server.log"

    def cluster_id(self) -> str | None:
        """The id the storage was formatted with, or None before the first start."""
        meta = self._home / "data" / "meta.properties"
        if not meta.exists():
            return None
        for line in meta.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
        return None

    def pid(self) -> int | None:
        """The pid of this cluster's running JVM, or None when it is not running."""
        try:
            pid = int(self._pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        # A recycled pid belongs to someone else: only ours names our properties file.
        return pid if str(self._properties_file).encode() in cmdline else None

    def is_running(self) -> bool:
        """True when the JVM of this cluster is alive (not necessarily ready)."""
        return self.pid() is not None

    def start(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Start the broker if it is not running, and wait until it answers metadata."""
        if self.is_running():
            log.info("cluster already running name=%s pid=%s", self.spec.name, self.pid())
            self.wait_ready(timeout)
            return
        self._write_config()
        if self.cluster_id() is None:
            self._format()
        self._launch()
        self.wait_ready(timeout)
        self.set_scram_users(self.spec.scram_users)

    def set_scram_users(self, users: Mapping[str, str]) -> None:
        """Create SCRAM users (name -> password), or set a new password, for both mechanisms, over the
        PLAINTEXT listener."""
        if not users:
            return
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialAlteration,
            UserScramCredentialUpsertion,
        )

        from replicator.kafka.admin import admin_client

        admin = admin_client(self.spec.bootstrap_servers)
        # A request may name each user once: one request per mechanism.
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            upserts: list[UserScramCredentialAlteration] = [
                UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), password.encode())
                for user, password in users.items()]
            for user, future in admin.alter_user_scram_credentials(upserts, request_timeout=15).items():
                try:
                    future.result(timeout=20)
                except KafkaException as exc:
                    raise ClusterError(f"cluster {self.spec.name}: creating SCRAM user {user}: "
                                       f"{exc.args[0].str()}") from None

    def _write_config(self) -> None:
        (self._home / "logs").mkdir(parents=True, exist_ok=True)
        body = "".join(f"{k}={v}\n" for k, v in server_properties(self.spec).items())
        self._properties_file.write_text(body)
        (self._home / "log4j2.properties").write_text(_LOG4J2.format(logs=self._home / "logs"))

    def _java(self, main_class: str, *args: str) -> list[str]:
        return [
            "java",
            f"-Xmx{self.spec.heap}",
            f"-Xms{self.spec.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._home / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self._home / 'logs'}",
            "-cp",
            kafka_classpath(),
            main_class,
            *args,
        ]

    def _format(self) -> None:
        cluster_id = self.spec.cluster_id or new_cluster_id()
        log.info("formatting storage name=%s cluster_id=%s", self.spec.name, cluster_id)
        command = self._java(
            "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self._properties_file)
        )
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ClusterError(f"cluster {self.spec.name}: storage format failed: {java_failure(done.stderr)}")

    def _launch(self) -> None:
        out = open(self._home / "logs" / "kafka.out", "ab")  # noqa: SIM115 - handed to the JVM
        with out:
            process = subprocess.Popen(
                self._java("kafka.Kafka", str(self._properties_file)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # detached: survives the CLI, no Ctrl-C from our terminal
                cwd=self._home,
            )
        self._process = process
        self._pid_file.write_text(str(process.pid))
        log.info("started name=%s pid=%s port=%s", self.spec.name, process.pid, self.spec.port)

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Block until the broker answers a metadata request; fail fast if the JVM died."""
        from replicator.kafka.admin import cluster_metadata

        deadline = time.monotonic() + timeout
        while True:
            if self._exited():
                raise ClusterError(
                    f"cluster {self.spec.name}: the broker exited during start-up; "
                    f"last lines of {self.log_file}:\n{self._log_tail()}"
                )
            try:
                cluster_metadata(self.spec.bootstrap_servers, timeout=1.0, explain=False)
                return
            except ClusterError:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"cluster {self.spec.name}: no answer on {self.spec.bootstrap_servers} "
                        f"after {timeout:.0f} s; see {self.log_file}",
                        retriable=True,
                    ) from None
                time.sleep(0.2)

    def _exited(self) -> bool:
        # Our own child: ask the OS (reading /proc while the JVM starts can race).
        if self._process is not None:
            return self._process.poll() is not None
        return not self.is_running()

    def _log_tail(self, lines: int = 10) -> str:
        """The broker's ERROR lines (or its last lines), to explain a failed start."""
        for candidate in (self.log_file, self._home / "logs" / "kafka.out"):
            if candidate.exists() and candidate.stat().st_size:
                text = candidate.read_text(errors="replace").splitlines()
                errors = [line for line in text if " ERROR " in line or " FATAL " in line]
                return "\n".join((errors or text)[-lines:])
        return "(no log written)"

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> bool:
        """Stop the broker cleanly (SIGTERM, then SIGKILL after ``timeout``); True if it ran."""
        pid = self.pid()
        if pid is None:
            self._pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.pid() is not None and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if self.pid() is not None:
            log.warning("broker did not stop in time, killing name=%s pid=%s", self.spec.name, pid)
            os.kill(pid, signal.SIGKILL)
            while self.pid() is not None:
                _reap(pid)
                time.sleep(0.05)
        _collect(pid)  # a zombie has no command line: pid() said "gone" before it was collected
        self._pid_file.unlink(missing_ok=True)
        log.info("stopped name=%s pid=%s", self.spec.name, pid)
        return True

    def kill(self) -> None:
        """SIGKILL the broker (a crash, for fault tests); data stays."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            while self.pid() is not None:
                _reap(pid)
                time.sleep(0.05)
            _collect(pid)  # a zombie has no command line: pid() said "gone" before it was collected

    def status(self) -> ClusterStatus:
        """Id, pid, liveness and (when running) the topic names of this cluster."""
        from replicator.kafka.admin import cluster_metadata

        pid = self.pid()
        topics: tuple[str, ...] = ()
        if pid is not None:
            try:
                topics = cluster_metadata(self.spec.bootstrap_servers, timeout=3.0, explain=False).topics
            except ClusterError:
                pass
        return ClusterStatus(
            name=self.spec.name,
            bootstrap_servers=self.spec.bootstrap_servers,
            cluster_id=self.cluster_id(),
            pid=pid,
            running=pid is not None,
            home=str(self._home),
            topics=topics,
        )


def java_failure(stderr: str) -> str:
    """What a JVM tool that failed said: its exception's message, not the end of the stack trace under it."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.strip().startswith("at ")]
    thrown = [line for line in lines if "Exception" in line or "Error" in line]
    said = (thrown or lines or ["(nothing on stderr)"])[0]
    return said.removeprefix('Exception in thread "main" ')[:500]


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _collect(pid: int, timeout: float = 10.0) -> None:
    """Wait until our own child's exit is collected (its last threads may still be ending after the
    process became a zombie); nothing for a process that is not our child."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            return
        time.sleep(0.02)
