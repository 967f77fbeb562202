"""`mirrorflow dev up|status|down` as a user runs them: idempotent, clean stops, data kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from replicator.kafka.admin import create_topics
from tests.support import free_port

pytestmark = pytest.mark.kafka


def _mirrorflow(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run([str(exe), *args, "--home", str(home)], capture_output=True, text=True,
                          env=env, timeout=180)


def _status(home: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
    done = _mirrorflow(home, env, "dev", "status", "--json")
    return {c["name"]: c for c in json.loads(done.stdout)}


def _alive(pid: object) -> bool:
    """A live process (a zombie waiting for its parent to reap it is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_dev_lifecycle(tmp_path: Path) -> None:
    """up, up again (nothing restarted), down (data kept), up, up --secure (TLS listeners), down --clean."""
    home = tmp_path / "home"
    ports = {"primary": free_port(), "backup": free_port()}
    env = {**os.environ, "MIRRORFLOW_DEV_PORTS": f"primary={ports['primary']},backup={ports['backup']}"}
    try:
        up = _mirrorflow(home, env, "dev", "up")
        assert up.returncode == 0, up.stderr
        config_path = home / "mirrorflow.yaml"
        assert str(config_path.resolve()) in up.stdout
        first = _status(home, env)
        assert {n: (c["running"], c["bootstrap_servers"]) for n, c in first.items()} == {
            n: (True, f"127.0.0.1:{p}") for n, p in ports.items()}
        assert all(_alive(c["pid"]) and c["cluster_id"] for c in first.values())

        # The written config is ready to use, and names these clusters.
        from replicator.config import load_config
        config = load_config(config_path, {})
        assert config.cluster("primary").bootstrap_servers == f"127.0.0.1:{ports['primary']}"

        again = _mirrorflow(home, env, "dev", "up")
        assert again.returncode == 0 and "already running" in again.stdout
        assert {n: c["pid"] for n, c in _status(home, env).items()} == {n: c["pid"] for n, c in first.items()}

        bootstrap = f"127.0.0.1:{ports['primary']}"
        create_topics(bootstrap, {"kept": 1})
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        producer.produce("kept", key=b"k", value=b"survives a restart")
        assert producer.flush(10) == 0

        down = _mirrorflow(home, env, "dev", "down")
        assert down.returncode == 0
        assert not any(_alive(c["pid"]) for c in first.values()), "dev down left a broker running"
        stopped = _mirrorflow(home, env, "dev", "status", "--json")
        assert stopped.returncode == 1 and not any(c["running"] for c in json.loads(stopped.stdout))

        assert _mirrorflow(home, env, "dev", "up").returncode == 0
        restarted = _status(home, env)
        assert {n: c["cluster_id"] for n, c in restarted.items()} == {n: c["cluster_id"] for n, c in first.items()}
        assert "kept" in restarted["primary"]["topics"]
        assert _read_one(bootstrap, "kept") == (b"k", b"survives a restart")

        # --secure restarts both with a SASL_SSL listener (data kept); the config it writes uses it, with the
        # generated password read from its file, and a command gets in with it.
        secured = _mirrorflow(home, env, "dev", "up", "--secure")
        assert secured.returncode == 0 and "TLS listeners (SASL_SSL" in secured.stdout, secured.stderr
        password = (home / "dev" / "secrets" / "scram.password").read_text().strip()
        text = config_path.read_text()
        assert "SASL_SSL" in text and f"127.0.0.1:{ports['primary'] + 2}" in text and password not in text
        sync = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "sync", "--dry-run", "--config",
                               str(config_path)], capture_output=True, text=True, env=env, timeout=120)
        assert sync.returncode == 0, sync.stderr
        assert password not in secured.stdout + secured.stderr + sync.stdout + sync.stderr
        assert "kept" in _status(home, env)["primary"]["topics"]
        restarted = _status(home, env)

        clean = _mirrorflow(home, env, "dev", "down", "--clean")
        assert clean.returncode == 0
        assert not any(_alive(c["pid"]) for c in restarted.values())
        assert not (home / "dev" / "primary").exists() and not (home / "dev" / "backup").exists()
    finally:
        _mirrorflow(home, env, "dev", "down")


def _read_one(bootstrap: str, topic: str) -> tuple[bytes | None, bytes | None]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lifecycle", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        msg = consumer.poll(15)
        assert msg is not None and msg.error() is None
        return msg.key(), msg.value()
    finally:
        consumer.close()
