"""A single-node Apache Kafka (KRaft) cluster on loopback, run from Maven's jars.

Used by ``mirrorflow dev`` and by the pytest fixtures alike. The broker runs as a
detached JVM process (it outlives the command that started it); everything about
it lives in one folder::

    <home>/server.properties   written from LocalClusterSpec
    <home>/log4j2.properties   broker logs go to <home>/logs/server.log
    <home>/data/               KRaft metadata and topic data (kept across stop/start)
    <home>/kafka.pid           the JVM's pid while it runs
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from replicator.errors import ClusterError
from replicator.jars import kafka_classpath

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
class TlsListener:
    """A TLS listener of a local cluster: ``SASL_SSL`` (SCRAM-SHA-256/512 logins) or ``SSL`` (with
    ``client_auth``, only clients with a certificate the truststore's CA signed get in: mutual TLS)."""

    name: str  # the listener's name in server.properties (not PLAINTEXT, CONTROLLER, PROXIED)
    port: int
    protocol: str  # SASL_SSL | SSL
    keystore: Path  # PEM: the broker's key, then its certificate chain
    truststore: Path  # PEM: the CA that signs client certificates
    client_auth: bool = False

    def bootstrap_servers(self, host: str) -> str:
        """``host:port`` of this listener."""
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class LocalClusterSpec:
    """What a local cluster looks like; every option later work needs is here."""

    name: str
    home: Path
    port: int
    controller_port: int
    host: str = "127.0.0.1"
    heap: str = "512m"
    auto_create_topics: bool = False
    authorizer: bool = False
    super_users: tuple[str, ...] = ("User:ANONYMOUS",)
    extra_properties: Mapping[str, str] = field(default_factory=dict)
    # A second listener, SASL_PLAINTEXT with mechanism PLAIN, for these users (name -> password).
    sasl_port: int | None = None
    sasl_users: Mapping[str, str] = field(default_factory=dict)
    # A second PLAINTEXT listener (named PROXIED) on ``proxied_port`` that advertises
    # ``proxy_advertised`` (``host:port`` of a TCP proxy in front of it). Clients follow the
    # advertised address, so those that bootstrap through the proxy stay behind it, while
    # clients of the main listener talk to the broker directly (fault tests).
    proxied_port: int | None = None
    proxy_advertised: str | None = None
    # TLS listeners (SASL_SSL with SCRAM, SSL with or without client certificates), and the SCRAM users
    # (name -> password) that ``LocalCluster.start`` creates for both SCRAM-SHA-256 and SCRAM-SHA-512.
    tls_listeners: tuple[TlsListener, ...] = ()
    scram_users: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker listener."""
        return f"{self.host}:{self.port}"

    @property
    def proxied_bootstrap_servers(self) -> str | None:
        """The proxy's ``host:port`` in front of the PROXIED listener, when there is one."""
        return self.proxy_advertised if self.proxied_port is not None else None

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """``host:port`` of the SASL listener, when there is one."""
        return None if self.sasl_port is None else f"{self.host}:{self.sasl_port}"


def server_properties(spec: LocalClusterSpec) -> dict[str, str]:
    """The broker's ``server.properties`` for ``spec`` (pure)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{spec.host}:{spec.controller_port}",
        "listeners": f"PLAINTEXT://{spec.host}:{spec.port},CONTROLLER://{spec.host}:{spec.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{spec.host}:{spec.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(spec.home / "data"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # KIP-848 groups: notice a crashed member in 10 s, not 45 (local clusters only)
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
        "auto.create.topics.enable": str(spec.auto_create_topics).lower(),
        "log.segment.bytes": str(64 * 1024 * 1024),
        "log.cleaner.backoff.ms": "1000",  # compacted topics compact within seconds (broker default 15 s)
        # The active controller writes a no-op record to the metadata log every 500 ms by default (KIP-835, for
        # a health metric), and the broker fetches each: a third of an idle local broker's CPU (3.0 -> 2.0 % of
        # a core, measured), which a machine running several test clusters feels.
        "metadata.max.idle.interval.ms": "5000",
    }
    if spec.authorizer:
        props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        props["super.users"] = ";".join(spec.super_users)
    if spec.sasl_port is not None:
        props.update(_sasl_listener(spec, props))
    if spec.proxied_port is not None:
        props.update(_proxied_listener(spec, props))
    for listener in spec.tls_listeners:
        props.update(_tls_listener(spec, listener, props))
    if spec.tls_listeners:
        # An mTLS client's principal is its certificate's CN (User:mirrorflow), not the whole subject.
        props["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
    props.update(spec.extra_properties)
    return props


def _with_listener(props: Mapping[str, str], name: str, bind: str, advertised: str,
                   protocol: str) -> dict[str, str]:
    """``listeners``, ``advertised.listeners`` and the protocol map of ``props`` with one more listener."""
    listeners = props["listeners"].split(",")
    listeners.insert(-1, f"{name}://{bind}")  # CONTROLLER stays last
    return {
        "listeners": ",".join(listeners),
        "advertised.listeners": f"{props['advertised.listeners']},{name}://{advertised}",
        "listener.security.protocol.map": f"{props['listener.security.protocol.map']},{name}:{protocol}",
    }


_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _tls_listener(spec: LocalClusterSpec, listener: TlsListener, props: Mapping[str, str]) -> dict[str, str]:
    if listener.protocol not in ("SASL_SSL", "SSL"):
        raise ClusterError(f"cluster {spec.name}: listener {listener.name}: protocol {listener.protocol!r} "
                           "is not a TLS one (SASL_SSL or SSL)")
    address = listener.bootstrap_servers(spec.host)
    out = _with_listener(props, listener.name, address, address, listener.protocol)
    prefix = f"listener.name.{listener.name.lower()}."
    out.update({
        f"{prefix}ssl.keystore.type": "PEM",
        f"{prefix}ssl.keystore.location": str(listener.keystore),
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(listener.truststore),
        f"{prefix}ssl.client.auth": "required" if listener.client_auth else "none",
    })
    if listener.protocol == "SASL_SSL":
        out[f"{prefix}sasl.enabled.mechanisms"] = ",".join(_SCRAM)
        for mechanism in _SCRAM:
            out[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    return out


def _proxied_listener(spec: LocalClusterSpec, props: Mapping[str, str]) -> dict[str, str]:
    """The PROXIED listener added to whatever listeners ``props`` already has."""
    if not spec.proxy_advertised:
        raise ClusterError(f"cluster {spec.name}: proxied_port needs proxy_advertised (the proxy's host:port)")
    return _with_listener(props, "PROXIED", f"{spec.host}:{spec.proxied_port}", spec.proxy_advertised, "PLAINTEXT")


def _sasl_listener(spec: LocalClusterSpec, props: Mapping[str, str]) -> dict[str, str]:
    users = " ".join(f'user_{name}="{password}"' for name, password in spec.sasl_users.items())
    address = f"{spec.host}:{spec.sasl_port}"
    return {
        **_with_listener(props, "SASL_PLAINTEXT", address, address, "SASL_PLAINTEXT"),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
    }


def new_cluster_id() -> str:
    """A random Kafka cluster id (a UUID in Kafka's base64url form)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):  # as Kafka's own: a leading dash reads as an option
            return cluster_id


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
        cluster_id = new_cluster_id()
        log.info("formatting storage name=%s cluster_id=%s", self.spec.name, cluster_id)
        command = self._java(
            "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self._properties_file)
        )
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ClusterError(
                f"cluster {self.spec.name}: storage format failed: {done.stderr.strip()[-500:]}"
            )

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
