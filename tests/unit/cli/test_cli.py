"""The mirrorflow command: help, exit codes, one-line errors, secrets never printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replicator.cli.main import build_parser, main

DESIGN_COMMANDS = ["dev", "demo", "run", "topics", "status", "sync", "checkpoint", "failover",
                   "failback", "audit", "backfill"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=60)


def test_help_lists_every_design_command() -> None:
    done = _run("--help")
    assert done.returncode == 0
    for command in DESIGN_COMMANDS:
        assert command in done.stdout, command


@pytest.mark.parametrize("argv", [["dev", "--help"], ["dev", "up", "--help"], ["dev", "down", "--help"],
                                  ["dev", "status", "--help"], ["demo", "--help"], ["db", "upgrade", "--help"],
                                  ["config", "check", "--help"]])
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 0
    assert "usage: mirrorflow" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "level"), [
    (["status"], "warning"),
    (["--log-level", "info", "status"], "info"),
    (["status", "--log-level", "debug"], "debug"),  # after the command too (#15: one CLI style)
    (["--log-level", "info", "status", "--log-level", "error"], "error"),  # the later one wins
    (["config", "check", "--log-level", "info"], "info"),  # and after a group's action
])
def test_the_log_level_goes_before_or_after_the_command(argv: list[str], level: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIRRORFLOW_LOG_LEVEL", raising=False)
    assert build_parser().parse_args(argv).log_level == level


def test_a_bad_log_level_after_the_command_exits_2_naming_it() -> None:
    done = _run("status", "--log-level", "loud")
    assert done.returncode == 2 and "argument --log-level: invalid choice: 'loud'" in done.stderr


def test_unknown_command_exits_2_with_one_line() -> None:
    done = _run("frobnicate")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "invalid choice" in done.stderr


def test_bad_config_exits_2_with_key_path_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text(
        "clusters:\n  a: {bootstrap.servers: 'h:1', sasl.password: topsecret}\n"
        "routes:\n  - {name: r, source: a, target: nowhere, topics: [x]}\n"
    )
    done = _run("config", "check", "--config", str(bad))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"mirrorflow: error: {bad}: routes[0].target: unknown cluster 'nowhere' (known: a)"
    )
    assert "Traceback" not in done.stderr and "topsecret" not in done.stderr + done.stdout


def test_config_check_json_masks_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "m.yaml"
    good.write_text("clusters:\n  a: {bootstrap.servers: 'h:1', sasl.password: topsecret, ssl.key.pem: PEM}\n"
                    "state: {url: 'postgresql+psycopg://app:dbsecret@db/mf'}\n")
    assert main(["config", "check", "--config", str(good), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["clusters"]["a"] == {"bootstrap.servers": "h:1", "sasl.password": "********",
                                      "ssl.key.pem": "********"}
    assert shown["state"]["url"] == "postgresql+psycopg://app:********@db/mf"
    assert main(["config", "check", "--config", str(good)]) == 0
    out = capsys.readouterr().out
    assert "state: postgresql+psycopg://app:********@db/mf" in out and "dbsecret" not in out


def test_config_comes_from_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "env.yaml"
    good.write_text("clusters:\n  only: {bootstrap.servers: 'h:1'}\n")
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(good))
    assert main(["config", "check"]) == 0
    assert "only" in capsys.readouterr().out


def test_bad_dev_ports_env_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setenv("MIRRORFLOW_DEV_PORTS", "primary=abc")
    assert main(["dev", "status", "--home", str(tmp_path)]) == 2
    assert "MIRRORFLOW_DEV_PORTS" in capsys.readouterr().err


@pytest.mark.parametrize("worker_id", ["", "has space", "x" * 201, "semi;colon"])
def test_a_bad_worker_id_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           worker_id: str) -> None:
    config = tmp_path / "mirrorflow.yaml"
    config.write_text("clusters: {a: {bootstrap.servers: '127.0.0.1:1'}}\n"
                      "routes: [{name: r, source: a, target: a, topics: [t]}]\n")
    assert main(["run", "--config", str(config), "--worker-id", worker_id]) == 2
    assert "--worker-id" in capsys.readouterr().err


def test_the_command_tree_imports_no_runbook_database_or_spark() -> None:
    # Every command (`status` and `--help` included) paid for the backfill runbook's imports (SQLAlchemy,
    # pendulum, Spark's launcher) until its command imported them at the top: about a second each time.
    code = ("import sys\nfrom replicator.cli.main import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('sqlalchemy', 'pendulum', 'pyspark', 'alembic', 'airflow', 'replicator.runbooks')"
            " if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
