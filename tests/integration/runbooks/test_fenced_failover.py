"""Fenced cutover on real brokers: a source with an authorizer and SASL users, a plain backup.

Producers of the applications (``User:app`` over SASL) are stopped by the fence and
lose nothing: every record the source acknowledged is on the backup, in order. A
writer the fence cannot stop (the plaintext listener's ANONYMOUS is a super user)
rolls the cutover back: the fence lifted, the route still copying. Accepting the
bypass goes on; the fence then stays until a failback lifts it. A source that cannot
be fenced exits 2 before anything changes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from replicator.dev.localcluster import LocalCluster, LocalClusterSpec
from replicator.kafka.admin import admin_client, create_topics
from tests.kafka_io import end_offsets, read_all, wait_until
from tests.support import Worker, free_port

pytestmark = pytest.mark.kafka

MIRRORFLOW = str(Path(sys.executable).parent / "mirrorflow")
PASSWORDS = {"app": "app-pa55", "ops": "ops-pa55"}
PARTITIONS = 2
ROUTES = {  # route -> (topic, fence settings)
    "fenced": ("fx-orders", {"watch": 3}),
    "bypassed": ("fx-bypass", {"watch": 3, "exempt": ["User:ops"]}),
    "open": ("fx-open", {"exempt": ["User:ops"]}),  # ALLOW User:* WRITE: cannot spare User:ops
}


@dataclass
class Secured:
    primary: LocalCluster
    backup: LocalCluster
    config: Path
    home: Path

    @property
    def p(self) -> str:
        return self.primary.spec.bootstrap_servers

    @property
    def b(self) -> str:
        return self.backup.spec.bootstrap_servers

    def as_user(self, user: str) -> dict[str, str]:
        return {"bootstrap.servers": str(self.primary.spec.sasl_bootstrap_servers), "security.protocol":
                "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": PASSWORDS[user]}

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(self.home / "state.db") as db:
            return db.execute(sql).fetchall()


def _grant(bootstrap: str, bindings: list[AclBinding]) -> None:
    admin = admin_client(bootstrap)  # held until the futures are done
    for future in admin.create_acls(bindings).values():
        future.result(timeout=15)


def _allow(topic: str, principal: str, operation: AclOperation, pattern: ResourcePatternType) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, pattern, principal, "*", operation, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    home = tmp_path_factory.mktemp("fence")
    port, backup_port = free_port(), free_port()
    primary = LocalCluster(LocalClusterSpec("fprimary", home / "fprimary", port, port + 1, heap="384m",
                                            authorizer=True, sasl_port=free_port(), sasl_users=PASSWORDS))
    backup = LocalCluster(LocalClusterSpec("fbackup", home / "fbackup", backup_port, backup_port + 1, heap="384m"))
    primary.start()
    try:
        backup.start()
        bootstrap = primary.spec.bootstrap_servers  # its plaintext listener's ANONYMOUS is a super user
        _grant(bootstrap, [_allow(prefix, user, op, ResourcePatternType.PREFIXED) for prefix in ("fx-", "backup.")
                           for user in ("User:app", "User:ops") for op in (AclOperation.WRITE, AclOperation.DESCRIBE)]
               + [_allow("fx-open", "User:*", AclOperation.WRITE, ResourcePatternType.LITERAL)])
        create_topics(bootstrap, {topic: PARTITIONS for topic, _ in ROUTES.values()} | {"pt-a": 2, "pt-b": 2})
        clusters = {"primary": {"bootstrap.servers": bootstrap}, "backup": {"bootstrap.servers":
                                                                             backup.spec.bootstrap_servers},
                    "plain": {"bootstrap.servers": backup.spec.bootstrap_servers},
                    "primary-as-app": {"bootstrap.servers": str(primary.spec.sasl_bootstrap_servers),
                                       "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                       "sasl.username": "app", "sasl.password": PASSWORDS["app"]}}
        routes = [{"name": name, "source": "primary", "target": "backup", "topics": [topic], "fence": fence,
                   "checkpoints": {"groups": ["nobody"]}} for name, (topic, fence) in ROUTES.items()]
        routes += [{"name": "unauthorized", "source": "plain", "target": "primary", "topics": ["fx-plain"]},
                   {"name": "weak", "source": "primary-as-app", "target": "backup", "topics": ["fx-orders"]},
                   # The other way: the secured cluster as a target, its replicas read-only (the replicator,
                   # on its plaintext listener, is a super user: no writer to name).
                   {"name": "ro", "source": "backup", "target": "primary", "topics": ["ro-orders"],
                    "sync": {"read_only": True, "grant_write": True}, "checkpoints": {"groups": ["nobody"]}},
                   # Failed over one topic at a time.
                   {"name": "pt", "source": "primary", "target": "backup", "topics": ["pt-a", "pt-b"],
                    "checkpoints": {"groups": ["pt-app"]}}]
        config = home / "m.yaml"
        config.write_text(json.dumps({"clusters": clusters, "routes": routes,
                                      "state": {"url": f"sqlite:///{home / 'state.db'}"}}))
        yield Secured(primary, backup, config, home)
    finally:
        primary.stop()
        backup.stop()


@dataclass
class Writer:
    """Writes to a topic every few ms until stopped; keeps what the brokers acknowledged and what they refused."""

    settings: dict[str, str]
    topic: str
    acked: dict[int, list[tuple[int, bytes]]] = field(default_factory=lambda: {p: [] for p in range(PARTITIONS)})
    refused: list[str] = field(default_factory=list)
    acked_before_refusal: dict[int, int] | None = None  # per partition: records acknowledged when the first was refused
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def __enter__(self) -> Writer:
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(30)

    def _write(self) -> None:
        producer = Producer({**self.settings, "linger.ms": "5", "message.timeout.ms": "20000"})

        def delivered(error: KafkaError | None, message: object) -> None:
            if error is not None:
                self._refused(error.name())
            else:
                self.acked[message.partition()].append((message.offset(), message.value()))  # type: ignore[attr-defined]

        n = 0
        while not self.stop.is_set():
            try:
                producer.produce(self.topic, f"{self.topic}-{n}".encode(), f"k{n}".encode(),
                                 partition=n % PARTITIONS, on_delivery=delivered)
                n += 1
            except KafkaException as exc:  # refused at once: the client knows the topic is not authorized
                self._refused(exc.args[0].name())
            producer.poll(0.02)
        producer.flush(20)

    def _refused(self, name: str) -> None:
        if self.acked_before_refusal is None:
            self.acked_before_refusal = {p: len(v) for p, v in self.acked.items()}
        self.refused.append(name)

    def wait_for_some(self) -> None:
        wait_until(lambda: all(self.acked.values()), 30, f"records acknowledged on {self.topic}")


def _denies(secured: Secured, topic: str) -> set[str]:
    admin = admin_client(secured.p)
    found = admin.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY,  # type: ignore[arg-type]
        AclPermissionType.DENY)).result(timeout=15)
    return {b.principal for b in found}


def _failover(secured: Secured, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, "failover", "--config", str(secured.config), *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _failback(secured: Secured, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, "failback", "--config", str(secured.config), *args], capture_output=True,
                          text=True, timeout=180, check=False)


def _replica(secured: Secured, topic: str, ends: dict[int, int]) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of the replica of ``topic`` up to ``ends``: (source offset from the position, value)."""
    consumer = Consumer({"bootstrap.servers": secured.b, "group.id": f"read-{topic}", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(f"primary.{topic}", p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        wait_until(lambda: _drain(consumer, out) and all(len(out[p]) >= ends[p] for p in out), 90,
                   f"the replica of {topic} holds {ends}")
    finally:
        consumer.close()
    return {p: list(enumerate(values)) for p, values in out.items()}


def _drain(consumer: Consumer, out: dict[int, list[bytes]]) -> bool:
    for message in consumer.consume(500, 0.5):
        if message.error() is None:
            out[message.partition()].append(message.value() or b"")
    return True


def _until_line(process: subprocess.Popen[str], prefix: str) -> list[str]:
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"no line starting {prefix!r}: {''.join(lines)[-3000:]}")


def test_the_fence_stops_the_applications_producers_and_loses_none_of_their_records(secured: Secured) -> None:
    topic = ROUTES["fenced"][0]
    worker = Worker(secured.config, "fenced", log_dir=secured.home)
    try:
        with Writer(secured.as_user("app"), topic) as writer:
            writer.wait_for_some()
            done = _failover(secured, "--route", "fenced", "--fence")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert worker.process.wait(60) is not None  # it saw the route held and stopped by itself
    finally:
        if worker.process.poll() is None:
            worker.terminate()
    assert "[2/8] fence: done: fenced: DENY WRITE to User:* on fx-orders; nothing written in 3 s after it" \
        in done.stdout, done.stdout
    assert "RPO: 0 records: everything was copied when the route stopped" in done.stdout
    assert "Writes to the route's topics on 'primary' are denied by the fence" in done.stdout
    assert "TOPIC_AUTHORIZATION_FAILED" in writer.refused  # the fence stopped it
    # Everything the source acknowledged is on the backup, byte for byte, in order, and nothing else.
    acked = {p: [v for _, v in recs] for p, recs in writer.acked.items()}
    assert [o for o, _ in writer.acked[0]] == list(range(len(writer.acked[0])))
    copied = _replica(secured, topic, {p: len(v) for p, v in acked.items()})
    assert {p: [v for _, v in recs] for p, recs in copied.items()} == acked
    assert end_offsets(secured.p, topic, PARTITIONS) == {p: len(v) for p, v in acked.items()}
    assert _denies(secured, topic) == {"User:*"}
    [(record,)] = secured.rows("select fence_record from mf_failover_run where route = 'fenced'")
    assert json.loads(str(record))["lifted_at"] is None

    released = _failover(secured, "--route", "fenced", "--release")
    assert released.returncode == 0 and "fence of failover run" in released.stdout, released.stderr
    assert _denies(secured, topic) == set()
    with Writer(secured.as_user("app"), topic) as again:  # the applications may write there again
        again.wait_for_some()


def test_a_write_past_the_fence_rolls_the_cutover_back_and_the_route_keeps_copying(secured: Secured) -> None:
    topic = ROUTES["bypassed"][0]
    worker = Worker(secured.config, "bypassed", log_dir=secured.home)
    try:
        with Writer({"bootstrap.servers": secured.p}, topic) as superuser:  # ACLs do not bind a super user
            superuser.wait_for_some()
            rolled = _failover(secured, "--route", "bypassed", "--fence")
        assert rolled.returncode == 1, rolled.stdout[-3000:] + rolled.stderr[-3000:]
        assert "records were written to 'primary' past the fence" in rolled.stderr + rolled.stdout
        assert "fx-bypass-0:" in rolled.stderr and "The fence is lifted and the route left as it was" in rolled.stderr
        assert "Traceback" not in rolled.stderr
        assert _denies(secured, topic) == set()
        assert secured.rows("select status, stopped_at_step, route_stopped_at from mf_failover_run where route = "
                            "'bypassed'") == [("failed", "fence", None)]
        # The route was left as it was: its worker still copies, and the applications write again.
        with Writer(secured.as_user("app"), topic) as app:
            app.wait_for_some()
        assert worker.process.poll() is None, worker.output()[-3000:]
        ends = end_offsets(secured.p, topic, PARTITIONS)
        _replica(secured, topic, ends)

        # Accepted: it goes on; the fence denies only the writers not exempt (User:ops is), and stays up.
        accepting = subprocess.Popen([MIRRORFLOW, "failover", "--config", str(secured.config), "--route",
                                      "bypassed", "--fence", "--accept-bypass", "--restart"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        with Writer({"bootstrap.servers": secured.p}, topic):
            lines = _until_line(accepting, "[2/8] fence:")
        out, err = accepting.communicate(timeout=300)
        assert accepting.returncode == 0, "".join(lines) + out + err
        assert "fenced, bypassed:" in lines[-1] and "(--accept-bypass)" in lines[-1]
        assert "records were written past the fence (" in out and "accepted (--accept-bypass)" in out
        assert _denies(secured, topic) == {"User:app"}
    finally:
        if worker.process.poll() is None:
            worker.terminate()

    # A failback lifts it before its reverse copy writes to the old primary.
    back = subprocess.run([MIRRORFLOW, "failback", "--config", str(secured.config), "--route", "bypassed"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert back.returncode == 0, back.stdout[-3000:] + back.stderr[-3000:]
    assert "fence of failover run" in back.stdout and "lifted on 'primary'" in back.stdout
    assert _denies(secured, topic) == set()


def test_a_source_that_cannot_be_fenced_exits_2_before_anything_changes(secured: Secured) -> None:
    runs = secured.rows("select count(*) from mf_failover_run")
    for route, message in [
        ("unauthorized", "cluster 'plain' has no authorizer (authorizer.class.name is not set on its brokers)"),
        ("weak", "cluster 'primary-as-app': the fence needs DESCRIBE (to list ACLs) and ALTER (to create and "
                 "delete ACLs) on the cluster, which this client's principal lacks"),
        ("open", "cluster 'primary': topic 'fx-open': every principal may write it (ALLOW User:* WRITE)"),
    ]:
        refused = _failover(secured, "--route", route, "--fence")
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and PASSWORDS["app"] not in refused.stderr + refused.stdout
    unasked = _failover(secured, "--route", "fenced", "--accept-bypass")
    assert unasked.returncode == 2 and "--accept-bypass is for a fenced failover: add --fence" in unasked.stderr
    assert secured.rows("select count(*) from mf_failover_run") == runs
    assert _denies(secured, "fx-open") == set()


def test_read_only_replicas_refuse_the_applications_until_a_failover_makes_them_writable(secured: Secured) -> None:
    """sync.read_only: the sync denies WRITE on the replicas (here the secured cluster is the target), the
    replicator still copies into them; the failover lifts the denial, and the sync does not put it back."""
    create_topics(secured.b, {"ro-orders": PARTITIONS})
    synced = subprocess.run([MIRRORFLOW, "sync", "--config", str(secured.config), "--route", "ro"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "protect replica" in synced.stdout and "DENY User:* WRITE" in synced.stdout, synced.stdout
    assert _denies(secured, "backup.ro-orders") == {"User:*"}
    with Writer(secured.as_user("app"), "backup.ro-orders") as app:  # an application writing by mistake
        wait_until(lambda: "TOPIC_AUTHORIZATION_FAILED" in app.refused, 30, "the replica refusing it")
    assert not any(app.acked.values())
    worker = Worker(secured.config, "ro", log_dir=secured.home)
    try:
        with Writer({"bootstrap.servers": secured.b}, "ro-orders") as source:
            source.wait_for_some()
        sent = {p: len(v) for p, v in source.acked.items()}
        wait_until(lambda: end_offsets(secured.p, "backup.ro-orders", PARTITIONS) == sent, 60,
                   "the replicator copying into the read-only replica")
        over = _failover(secured, "--route", "ro")
        assert over.returncode == 0, over.stdout[-3000:] + over.stderr[-3000:]
    finally:
        if worker.process.poll() is None:
            worker.terminate()
    assert "replicas writable again: lifted 1 DENY WRITE ACL(s) of the read-only replicas" in over.stdout
    assert _denies(secured, "backup.ro-orders") == set()
    with Writer(secured.as_user("app"), "backup.ro-orders") as early:  # the applications write there now
        early.wait_for_some()
    again = subprocess.run([MIRRORFLOW, "sync", "--config", str(secured.config), "--route", "ro"],
                           capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0 and "protect replica" not in again.stdout, again.stdout
    assert _denies(secured, "backup.ro-orders") == set()

    # Failing back with --fence: the application writing on the target is fenced out before the drain, so
    # every record it got acknowledged there goes back, and nothing is left behind; the fence goes at release.
    with Writer(secured.as_user("app"), "backup.ro-orders") as app:
        app.wait_for_some()
        back = subprocess.run([MIRRORFLOW, "failback", "--config", str(secured.config), "--route", "ro", "--fence",
                               "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert back.returncode == 0, back.stdout[-3000:] + back.stderr[-3000:]
    run = json.loads(back.stdout)
    steps = {s["step"]: (s["status"], s["detail"]) for s in run["steps"]}
    assert steps["fence"][0] == "done" and "fenced: DENY WRITE to User:* on backup.ro-orders" in steps["fence"][1]
    assert "TOPIC_AUTHORIZATION_FAILED" in app.refused and run["not_copied"] == 0
    assert "fence on 'primary' lifted" in steps["release"][1] and run["fence"]["lifted_at"] is not None
    assert _denies(secured, "backup.ro-orders") == set()
    # What was there, then every record the application got acknowledged until the fence refused it, in order
    # (it went on writing through the failback: once the release lifted the fence, its writes succeed again
    # on the target, as they would for an application that did not move back).
    assert app.acked_before_refusal is not None
    home = read_all(secured.b, "ro-orders", PARTITIONS)
    for p in range(PARTITIONS):
        before = [v for w in (source, early) for _, v in w.acked[p]]
        got, written = [r.value for r in home[p]], [v for _, v in app.acked[p]]
        assert got[:len(before)] == before, p
        brought = got[len(before):]  # the application's records, in order, at least all acknowledged before
        assert brought == written[:len(brought)] and len(brought) >= app.acked_before_refusal[p], p


def _status(secured: Secured, route: str, what: str = "state") -> dict[tuple[str, int], str]:
    done = subprocess.run([MIRRORFLOW, "status", "--config", str(secured.config), "--route", route, "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return {(r["topic"], r["partition"]): r[what] for r in json.loads(done.stdout)}


def test_one_topic_fails_over_with_its_group_while_the_route_copies_the_others(secured: Secured) -> None:
    from tests.checkpoint_io import consume_part

    worker = Worker(secured.config, "pt", log_dir=secured.home)
    try:
        with Writer({"bootstrap.servers": secured.p}, "pt-a") as a, Writer({"bootstrap.servers": secured.p},
                                                                            "pt-b") as b:
            a.wait_for_some()
            b.wait_for_some()
        for topic, writer in (("pt-a", a), ("pt-b", b)):
            sent = {p: len(v) for p, v in writer.acked.items()}
            wait_until(lambda topic=topic, sent=sent: end_offsets(secured.b, f"primary.{topic}", PARTITIONS) == sent,
                       60, f"{topic} copied")
        consume_part(secured.p, "pt-app", "pt-a", {0: 1, 1: 1})

        unknown = _failover(secured, "--route", "pt", "--topic", "nope")
        assert unknown.returncode == 2 and "route pt does not copy topic 'nope'" in unknown.stderr, unknown.stderr
        moved = _failover(secured, "--route", "pt", "--topic", "pt-a", "--json")
        assert moved.returncode == 0, moved.stdout[-3000:] + moved.stderr[-3000:]
        run = json.loads(moved.stdout)
        assert {c["point"]["topic"] for c in run["commits"]} == {"pt-a"} and run["rpo"]["records"] == 0
        assert "Topic(s) pt-a of route pt failed over" in run["next_steps"]
        assert worker.process.poll() is None  # the route runs on, for its other topic

        # pt-a is held, pt-b copies on: a record of pt-a, then one of pt-b; the second arrives, the first not.
        ends_a = end_offsets(secured.b, "primary.pt-a", PARTITIONS)
        produce_one = Producer({"bootstrap.servers": secured.p})
        produce_one.produce("pt-a", b"held", b"k", partition=0)
        produce_one.produce("pt-b", b"marker", b"k", partition=0)
        produce_one.flush(15)
        ends_b = {p: len(v) + (p == 0) for p, v in b.acked.items()}
        wait_until(lambda: end_offsets(secured.b, "primary.pt-b", PARTITIONS) == ends_b, 60, "the marker copied")
        assert end_offsets(secured.b, "primary.pt-a", PARTITIONS) == ends_a
        states = _status(secured, "pt")
        assert {s for (t, _), s in states.items() if t == "pt-a"} == {"FAILED_OVER"}
        assert {s for (t, _), s in states.items() if t == "pt-b"} == {"COPYING"}
        owners = _status(secured, "pt", "worker")  # the one worker owns both topics' partitions, held or not
        assert {w.rsplit(":", 1)[1] for w in owners.values()} == {str(worker.process.pid)}, owners
        resumed = subprocess.run([MIRRORFLOW, "topics", "resume", "--config", str(secured.config), "--route", "pt",
                                  "--topic", "pt-a"], capture_output=True, text=True, timeout=60, check=False)
        assert resumed.returncode == 2 and "topic pt-a was failed over" in resumed.stderr, resumed.stderr
        whole = _failback(secured, "--route", "pt")
        assert whole.returncode == 2 and "only topic(s) pt-a were failed over (by topic): fail them back by name, " \
            "`mirrorflow failback --route pt --topic pt-a`" in whole.stderr, whole.stderr
        other = _failback(secured, "--route", "pt", "--topic", "pt-b")
        assert other.returncode == 2 and "topic 'pt-b' is not failed over (by topic)" in other.stderr, other.stderr

        # On the backup the applications wrote pt-a (its own topic of that name) and read some of it.
        create_topics(secured.b, {"pt-a": PARTITIONS})
        written = Producer({"bootstrap.servers": secured.b})
        for n in range(5):
            written.produce("pt-a", f"on-backup-{n}".encode(), b"k", partition=0)
        written.flush(15)
        primary_before = end_offsets(secured.p, "pt-a", PARTITIONS)
        back = _failback(secured, "--route", "pt", "--topic", "pt-a", "--json")
        assert back.returncode == 0, back.stdout[-3000:] + back.stderr[-3000:]
        run = json.loads(back.stdout)
        assert run["status"] == "done" and run["request"]["topics"] == ["pt-a"]
        assert {t["original"] for t in run["topics"]} == {"pt-a"} and run["copied"] == 5
        assert {c["point"]["target_topic"] for c in run["commits"]} == {"pt-a"}
        assert "nothing to start" in run["next_steps"] and worker.process.poll() is None
        # The records written on the backup are on the primary after its own, in order.
        tail = read_all(secured.p, "pt-a", PARTITIONS)[0][primary_before[0]:]
        assert [r.value for r in tail] == [f"on-backup-{n}".encode() for n in range(5)]

        # Released: the route copies pt-a again from where it stopped: the record held back, not the five the
        # reverse route brought (their origin is the backup); then a marker proves nothing else came.
        produce_one.produce("pt-a", b"after", b"k", partition=0)
        produce_one.flush(15)
        wait_until(lambda: end_offsets(secured.b, "primary.pt-a", PARTITIONS)[0] == ends_a[0] + 2, 60,
                   "the record held back and the marker copied once failed back")
        copied = read_all(secured.b, "primary.pt-a", PARTITIONS)[0][ends_a[0]:]
        assert [r.value for r in copied] == [b"held", b"after"]
        assert {s for (t, _), s in _status(secured, "pt").items()} == {"COPYING"}
    finally:
        if worker.process.poll() is None:
            worker.terminate()
