"""Routes over TLS listeners (SASL_SSL with SCRAM, mutual TLS), mixed with plaintext ones, and each bad security
setting named in one line at start: the cluster, the cause, never a secret, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from replicator.kafka.admin import create_topics
from tests.integration.secure.conftest import KEY_PASSWORD, PASSWORDS, Secured
from tests.kafka_io import end_offsets, produce, read_all, total, wait_until
from tests.records import by_partition, make_records
from tests.support import Worker

pytestmark = pytest.mark.kafka

MIRRORFLOW = str(Path(sys.executable).parent / "mirrorflow")


def _config(path: Path, clusters: dict[str, dict[str, str]], routes: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps({"clusters": clusters, "routes": routes,
                                "state": {"url": f"sqlite:///{path.parent / 'state.db'}"}}))
    return path


def test_routes_copy_byte_for_byte_over_scram_and_mutual_tls_and_to_and_from_plaintext(  # type: ignore[no-untyped-def]
        secured: Secured, primary, backup, unique_name, tmp_path, workers, monkeypatch) -> None:
    """One worker, three routes: SASL_SSL/SCRAM-SHA-512 source -> mutual-TLS target (TLS on both sides), a
    plaintext source -> SASL_SSL/SCRAM-SHA-256 target, and SASL_SSL -> plaintext. The SCRAM passwords come from a
    file and from the environment, never from the YAML; none of them shows in the worker's log or in status."""
    partitions = 3
    topics = {"both": f"{unique_name}-both", "in": f"{unique_name}-in", "out": f"{unique_name}-out"}
    create_topics(secured.plaintext, {topics["both"]: partitions, topics["out"]: partitions})
    create_topics(primary.bootstrap_servers, {topics["in"]: partitions})
    records = {name: make_records(partitions, 300, name) for name in topics}
    produce(secured.plaintext, topics["both"], records["both"])
    produce(secured.plaintext, topics["out"], records["out"])
    produce(primary.bootstrap_servers, topics["in"], records["in"])

    (tmp_path / "eu.password").write_text(PASSWORDS["mirrorflow"] + "\n")
    (tmp_path / "us.key.password").write_text(KEY_PASSWORD + "\n")
    monkeypatch.setenv("APP_SCRAM_PASSWORD", PASSWORDS["app"])
    eu = {**secured.scram(), "sasl.password": "${file:eu.password}"}
    eu256 = {**secured.scram("app", mechanism="SCRAM-SHA-256"), "sasl.password": "${APP_SCRAM_PASSWORD}"}
    config = _config(tmp_path / "mirrorflow.yaml", {
        "eu": eu, "us": secured.mtls("${file:us.key.password}"), "eu256": eu256,  # an encrypted client key
        "primary": {"bootstrap.servers": primary.bootstrap_servers},
        "backup": {"bootstrap.servers": backup.bootstrap_servers},
    }, [
        {"name": "eu-us", "source": "eu", "target": "us", "topics": [topics["both"]]},
        {"name": "primary-eu", "source": "primary", "target": "eu256", "topics": [topics["in"]]},
        {"name": "eu-backup", "source": "eu", "target": "backup", "topics": [topics["out"]]},
    ])
    assert PASSWORDS["mirrorflow"] not in config.read_text() and PASSWORDS["app"] not in config.read_text()
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)

    copies = {"both": (secured.plaintext, f"eu.{topics['both']}"), "in": (secured.plaintext, f"primary.{topics['in']}"),
              "out": (backup.bootstrap_servers, f"eu.{topics['out']}")}
    for name, (bootstrap, remote) in copies.items():
        want = by_partition(records[name], partitions)
        wait_until(lambda b=bootstrap, r=remote: total(end_offsets(b, r, partitions)) >= 300 * partitions, 90,
                   f"{remote} to catch up; worker log: {worker.output()[-1500:]}")
        assert read_all(bootstrap, remote, partitions) == want, name

    shown = []  # status reads the source's ends and the route's commits over the same secured listeners

    def status_says_caught_up() -> bool:
        done = subprocess.run([MIRRORFLOW, "status", "--config", str(config), "--json"], capture_output=True,
                              text=True, timeout=120)
        shown.append(done.stdout + done.stderr)
        assert done.returncode == 0, done.stderr[-2000:]
        rows = [row for row in json.loads(done.stdout) if row["topic"].startswith(unique_name)]  # not heartbeats
        return (sorted((row["route"], row["topic"], row["partition"]) for row in rows) == sorted(
            (route, topics[name], p) for route, name in (("eu-us", "both"), ("primary-eu", "in"), ("eu-backup", "out"))
            for p in range(partitions)) and all(row["lag"] == 0 for row in rows))

    try:
        wait_until(status_says_caught_up, 60, "status to show every partition caught up")
    except AssertionError:
        rows = [(r["route"], r["topic"][-5:], r["partition"], r["lag"]) for r in json.loads(shown[-1])]
        raise AssertionError(f"status showed: {rows}") from None
    code, _ = worker.terminate()
    assert code == 0, worker.output()[-2000:]
    everything = worker.output() + "".join(shown)
    for secret in (*PASSWORDS.values(), KEY_PASSWORD):
        assert secret not in everything
    assert "Traceback" not in everything


def _eu_to_backup(path: Path, eu: dict[str, str], backup: str) -> Path:
    return _config(path, {"eu": eu, "backup": {"bootstrap.servers": backup}},
                   [{"name": "eu-backup", "source": "eu", "target": "backup", "topics": ["orders"]}])


def _bad_cases(secured: Secured, tmp_path: Path) -> dict[str, tuple[dict[str, str], int, str]]:
    """name -> (the source cluster's properties, the exit code, what the one line must say)."""
    listeners = secured.listeners
    return {
        "wrong password": (secured.scram(password="not-the-Pa55word"), 1, "authentication failed"),
        "unknown SCRAM user": (secured.scram("nobody", password="nobody-Pa55word", mechanism="SCRAM-SHA-256"), 1,
                               "authentication failed"),
        "untrusted broker certificate": ({**secured.scram(), "ssl.ca.location": str(secured.other_ca)}, 1,
                                         "not signed by a CA the client trusts"),
        "expired broker certificate": ({"bootstrap.servers": listeners["EXPIRED"], "security.protocol": "SSL",
                                        "ssl.ca.location": str(secured.ca)}, 1, "certificate has expired"),
        "hostname mismatch": ({"bootstrap.servers": listeners["WRONGNAME"], "security.protocol": "SSL",
                               "ssl.ca.location": str(secured.ca)}, 1, "does not name the address"),
        "client certificate refused": ({**secured.mtls(), "ssl.certificate.location": str(secured.stranger.cert),
                                        "ssl.key.location": str(secured.stranger.key)}, 1,
                                       "the broker refused the client certificate"),
        "expired client certificate": ({**secured.mtls(), "ssl.certificate.location":
                                        str(secured.expired_client.cert),
                                        "ssl.key.location": str(secured.expired_client.key)}, 1,
                                       "the broker refused the client certificate"),
        "missing key file": ({**secured.mtls(), "ssl.key.location": str(tmp_path / "gone.key")}, 2,
                             f"clusters.eu.ssl.key.location: cannot read {tmp_path / 'gone.key'}"),
        "encrypted key, no ssl.key.password": ({k: v for k, v in secured.mtls(KEY_PASSWORD).items()
                                                if k != "ssl.key.password"}, 2,
                                               "clusters.eu.ssl.key.password: the key "),
        "wrong ssl.key.password": (secured.mtls("not-the-key-Pa55word"), 2,
                                   "clusters.eu.ssl.key.password: does not decrypt the key"),
        "TLS listener reached as plaintext": ({"bootstrap.servers": listeners["SECURE"]}, 1,
                                              "speaks TLS but security.protocol is PLAINTEXT"),
        "plaintext listener reached with TLS": ({"bootstrap.servers": secured.plaintext, "security.protocol": "SSL",
                                                 "ssl.ca.location": str(secured.ca)}, 1,
                                                "the listener does not speak TLS"),
    }


def test_each_bad_security_setting_is_named_in_one_line_at_start(  # type: ignore[no-untyped-def]
        secured: Secured, backup, tmp_path) -> None:
    """`mirrorflow run` (all cases at once), then the other commands that read a route's clusters (a wrong
    password): exit 1 for a cluster that refuses us, 2 for a file the config names that cannot be read; one line
    naming the cluster and the cause; no secret, no traceback; none waits for a cluster that will never let it in."""
    cases = _bad_cases(secured, tmp_path)
    running = {}
    for index, (name, (eu, _, _)) in enumerate(cases.items()):
        folder = tmp_path / f"case{index}"
        folder.mkdir()
        config = _eu_to_backup(folder / "mirrorflow.yaml", eu, backup.bootstrap_servers)
        running[name] = (time.monotonic(), subprocess.Popen([MIRRORFLOW, "run", "--config", str(config)],
                                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for name, (began, process) in running.items():
        out, err = process.communicate(timeout=90)
        took = time.monotonic() - began
        _, code, said = cases[name]
        lines = [line for line in err.splitlines() if line.strip()]
        assert process.returncode == code, f"{name}: exit {process.returncode}: {err[-1500:]}"
        assert len(lines) == 1 and said in lines[0], f"{name}: {err[-1500:]}"
        if code == 1:
            assert "source cluster 'eu'" in lines[0], f"{name}: {lines[0]}"
        for secret in (*PASSWORDS.values(), "not-the-Pa55word", "nobody-Pa55word", "not-the-key-Pa55word"):
            assert secret not in out + err, name
        assert "Traceback" not in out + err, name
        print(f"{name}: exit {process.returncode} after {took:.1f} s: {lines[0]}")

    eu, _, _ = cases["wrong password"]
    config = _eu_to_backup(tmp_path / "commands.yaml", eu, backup.bootstrap_servers)
    commands = [["status"], ["sync", "--dry-run"], ["checkpoint"],
                ["audit", "--route", "eu-backup", "--from", "2026-01-01T00:00", "--to", "2026-01-01T01:00"],
                ["backfill", "--route", "eu-backup", "--topic", "orders", "--from-offset", "0=0"]]
    started = [subprocess.Popen([MIRRORFLOW, *command, "--config", str(config)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for command in commands]
    for command, process in zip(commands, started, strict=True):
        out, err = process.communicate(timeout=120)
        lines = [line for line in err.splitlines() if line.strip()]
        assert process.returncode == 1 and len(lines) == 1, f"{command}: exit {process.returncode}: {err[-1500:]}"
        assert "'eu'" in lines[0] and "authentication failed" in lines[0], f"{command}: {lines[0]}"
        assert "not-the-Pa55word" not in out + err and "Traceback" not in out + err, command


def _run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, *args, "--config", str(config)], capture_output=True, text=True, timeout=300)


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_sync_checkpoint_backfill_audit_and_failover_run_against_secured_clusters(  # type: ignore[no-untyped-def]
        secured: Secured, unique_name, tmp_path, workers, monkeypatch) -> None:
    """Route eu -> us: a SCRAM login (password from a file) on the source, a client certificate on the target
    (its key encrypted, the key's password from the environment: Spark's Java client decrypts it too).
    sync creates the replica; the route, started at the end, copies the new records; checkpoint translates a
    group; backfill (Spark, with the same settings mapped to the Java client) copies the older records once;
    the audit (Spark) finds the replica whole; a planned failover moves the group. No secret in any output, in
    the state DB, or on the Replication page and its JSON."""
    from tests.kafka_io import Rec, committed

    partitions, old_n, new_n, topic = 2, 40, 60, unique_name
    create_topics(secured.plaintext, {topic: partitions})
    now = int(time.time() * 1000)
    old = {p: [Rec(p, f"old-{p}-{n}".encode(), bytes([n, 0, 255]) * 3, (("n", str(n).encode()),),
                   now - 3_600_000 + n * 1000) for n in range(old_n)] for p in range(partitions)}
    new = {p: [Rec(p, f"new-{p}-{n}".encode(), f"v{n}".encode(), (), now - 600_000 + n * 1000) for n in range(new_n)]
           for p in range(partitions)}
    produce(secured.plaintext, topic, [r for p in range(partitions) for r in old[p]])
    (tmp_path / "eu.password").write_text(PASSWORDS["mirrorflow"])
    monkeypatch.setenv("US_KEY_PASSWORD", KEY_PASSWORD)
    config = _config(tmp_path / "mirrorflow.yaml", {
        "eu": {**secured.scram(), "sasl.password": "${file:eu.password}"}, "us": secured.mtls("${US_KEY_PASSWORD}")},
        [{"name": "eu-us", "source": "eu", "target": "us", "topics": [topic], "start": "latest"}])
    replica, outputs = f"eu.{topic}", []

    def ran(*args: str) -> subprocess.CompletedProcess[str]:
        done = _run(config, *args)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, f"{args}: {done.stdout[-1500:]} {done.stderr[-1500:]}"
        return done

    ran("sync")
    assert end_offsets(secured.plaintext, replica, partitions) == {p: 0 for p in range(partitions)}
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    wait_until(lambda: all(f"{topic}[{p}]@{old_n}" in worker.output() for p in range(partitions)), 60,
               "the route to start at the end of each partition")
    produce(secured.plaintext, topic, [r for p in range(partitions) for r in new[p]])
    ends = {p: old_n + new_n for p in range(partitions)}
    wait_until(lambda: committed(secured.plaintext, "mirrorflow-eu-us", topic, partitions) == ends, 90,
               "the route to copy the new records")
    assert read_all(secured.plaintext, replica, partitions) == new

    app = Consumer({"bootstrap.servers": secured.plaintext, "group.id": f"{unique_name}-app"})
    app.commit(offsets=[TopicPartition(topic, p, old_n + 30) for p in range(partitions)], asynchronous=False)
    app.close()
    ran("checkpoint")
    starts, stops = (",".join(f"{p}={at}" for p in range(partitions)) for at in (0, old_n))
    ran("backfill", "--route", "eu-us", "--topic", topic, "--from-offset", starts, "--to-offset", stops)
    assert read_all(secured.plaintext, replica, partitions) == {p: new[p] + old[p] for p in range(partitions)}
    audit = ran("audit", "--route", "eu-us", "--from", _iso(now - 2 * 3_600_000), "--to", _iso(now), "--json")
    summary = json.loads(audit.stdout)["topics"][topic]
    assert (summary["status"], summary["source"], summary["target"], summary["missing"]) == (
        "clean", partitions * (old_n + new_n), partitions * (old_n + new_n), 0), audit.stdout[-2000:]

    code, _ = worker.terminate()
    assert code == 0, worker.output()[-2000:]
    ran("failover", "--route", "eu-us")
    # Source offset old_n + 30 is the 31st record the route copied: target offset 30 (the backfill came after).
    assert committed(secured.plaintext, f"{unique_name}-app", replica, partitions) == {p: 30 for p in range(partitions)}
    everything = "".join(outputs) + worker.output() + _replication_page(f"sqlite:///{tmp_path / 'state.db'}")
    assert "eu-us" in everything  # the page shows the route
    for secret in (*PASSWORDS.values(), KEY_PASSWORD):
        assert secret not in everything
        assert secret.encode() not in (tmp_path / "state.db").read_bytes()
    assert "Traceback" not in everything


def _replication_page(state_url: str) -> str:
    """The Replication page and its JSON for the state DB at ``state_url`` (Airflow's login check stood in for)."""
    from fastapi.testclient import TestClient

    from replicator.ui.app import API_PATH, AUTHORIZED, PAGE_PATH, create_app

    app = create_app(lambda: state_url)
    app.dependency_overrides[AUTHORIZED] = lambda: None
    with TestClient(app) as client:
        page, data = client.get(PAGE_PATH), client.get(API_PATH)
    assert page.status_code == data.status_code == 200, page.text[-500:]
    return page.text + data.text


def test_a_password_rotated_on_the_broker_and_in_its_file_is_used_without_a_restart(  # type: ignore[no-untyped-def]
        secured: Secured, backup, unique_name, tmp_path, workers) -> None:
    """The source's password changes on the broker and in the file the config reads it from; the broker asks
    for the login again within seconds (the ROTATE listener). The running worker logs in with the new password
    and copies on: every record arrives, byte for byte, no restart, no password in its log."""
    old, new = "Rotate-Old-Pa55-1b9c", "Rotate-New-Pa55-e27a"
    user, topic, partitions = f"rot-{unique_name[-8:]}", unique_name, 2
    secured.cluster.set_scram_users({user: old})
    create_topics(secured.plaintext, {topic: partitions})
    before, after = make_records(partitions, 50, "before"), make_records(partitions, 50, "after")
    produce(secured.plaintext, topic, before)
    (tmp_path / "source.password").write_text(old + "\n")
    source = {**secured.scram(user), "bootstrap.servers": secured.listeners["ROTATE"],
              "sasl.password": "${file:source.password}"}
    config = _config(tmp_path / "mirrorflow.yaml", {"eu": source, "backup": {"bootstrap.servers":
                                                                              backup.bootstrap_servers}},
                     [{"name": "rotated", "source": "eu", "target": "backup", "topics": [topic]}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    replica = f"eu.{topic}"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, replica, partitions)) >= len(before), 90,
               f"the first records on the replica; worker log: {worker.output()[-1500:]}")

    secured.cluster.set_scram_users({user: new})  # the old password no longer gets in
    (tmp_path / "source.password").write_text(new + "\n")
    # The broker asks the worker's connections to log in again within 3 s: refused, then read again.
    wait_until(lambda: "cluster eu: login read again from" in worker.output(), 60,
               f"the worker to read the new password; worker log: {worker.output()[-2500:]}")
    produce(secured.plaintext, topic, after)  # copied only with the new login (the old one is refused)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, replica, partitions)) >= len(before + after),
               90, f"the records written after the rotation; worker log: {worker.output()[-2500:]}")
    assert read_all(backup.bootstrap_servers, replica, partitions) == by_partition(before + after, partitions)
    log = worker.output()
    refused = [line for line in log.splitlines() if "source cluster refuses the worker" in line]
    assert len(refused) == 1 and "authentication failed" in refused[0], log[-3000:]
    assert log.index("login read again") < log.index("source cluster reachable again"), log[-3000:]
    assert old not in log and new not in log
    assert worker.process.poll() is None  # still running: no restart
