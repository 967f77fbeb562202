"""The local Airflow's pure parts: port, environment, commands, login, readiness, DAG matching."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replicator.cli.main import main
from replicator.dev.airflow_local import (
    DEFAULT_PORT,
    AirflowSpec,
    LocalAirflow,
    airflow_env,
    component_command,
    ensure_admin_login,
    not_ready_message,
    parse_port,
    poll_until_ready,
)
from replicator.dev.airflow_rest import (
    AirflowError,
    components_waiting,
    dag_report,
    expected_dag_files,
)
from replicator.dev.process_tree import proc_state, session_members, stop_sessions
from replicator.errors import UsageError
from replicator.paths import DAGS_DIR, PLUGINS_DIR, REPO_ROOT

HEALTHY = {"status": "healthy"}


@pytest.mark.parametrize(
    ("text", "port"),
    [(None, DEFAULT_PORT), ("", DEFAULT_PORT), ("18090", 18090), (" 1 ", 1), ("65535", 65535)],
)
def test_port_from_environment(text: str | None, port: int) -> None:
    assert parse_port(text) == port


@pytest.mark.parametrize("text", ["abc", "0", "65536", "-1", "80x"])
def test_bad_port_is_a_usage_error_naming_the_variable(text: str) -> None:
    with pytest.raises(UsageError, match="MIRRORFLOW_AIRFLOW_PORT"):
        parse_port(text)


def test_environment_isolates_airflow_in_the_dev_home(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path / "home", port=18123, bin_dir=Path("/venv/bin"))
    shell = {
        "PATH": "/usr/bin",
        "PYTHONPATH": "/mine",
        "HOME": "/root",
        "AIRFLOW_HOME": "/prod/airflow",
        "AIRFLOW_CONFIG": "/prod/airflow.cfg",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://prod",
        "AIRFLOW_CONN_PROD": "secret",
    }
    env = airflow_env(spec, shell)
    home = (tmp_path / "home").resolve() / "airflow"
    assert "AIRFLOW_CONN_PROD" not in env and env["HOME"] == "/root"
    assert env["AIRFLOW_HOME"] == str(home) and env["AIRFLOW_CONFIG"] == str(home / "airflow.cfg")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{home / 'airflow.db'}"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1" and env["AIRFLOW__API__PORT"] == "18123"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18123/execution/"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(DAGS_DIR)
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(PLUGINS_DIR)
    assert env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] == "False"
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__PARALLELISM"] == "2"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(spec.password_file)
    assert env["MIRRORFLOW_CONFIG"] == str((tmp_path / "home").resolve() / "mirrorflow.yaml")
    assert env["PYTHONPATH"].split(":") == [str(REPO_ROOT), "/mine"]
    assert env["PATH"].split(":") == ["/venv/bin", "/usr/bin"]


def test_commands_listen_on_loopback_only_and_serve_no_logs(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path, port=18123, bin_dir=Path("/venv/bin"))
    assert component_command(spec, "api-server") == [
        "/venv/bin/airflow",
        "api-server",
        "--host",
        "127.0.0.1",
        "--port",
        "18123",
    ]
    assert component_command(spec, "scheduler") == [
        "/venv/bin/airflow",
        "scheduler",
        "--skip-serve-logs",
    ]
    assert component_command(spec, "triggerer") == [
        "/venv/bin/airflow",
        "triggerer",
        "--skip-serve-logs",
    ]
    assert component_command(spec, "dag-processor") == ["/venv/bin/airflow", "dag-processor"]


def test_admin_password_is_created_once_private_and_never_in_a_repr(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path)
    first = ensure_admin_login(spec)
    assert first.user == "admin" and first.new_password and len(first.new_password) >= 16
    assert first.new_password not in repr(first)
    assert stat.S_IMODE(spec.password_file.stat().st_mode) == 0o600
    assert json.loads(spec.password_file.read_text()) == {"admin": first.new_password}
    again = ensure_admin_login(spec)
    assert again.new_password is None and again.password_file == spec.password_file
    assert json.loads(spec.password_file.read_text()) == {"admin": first.new_password}


def test_admin_password_joins_other_users_and_a_broken_file_is_named(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path)
    spec.password_file.parent.mkdir(parents=True)
    spec.password_file.write_text('{"viewer": "v"}')
    login = ensure_admin_login(spec)
    assert json.loads(spec.password_file.read_text()) == {
        "viewer": "v",
        "admin": login.new_password,
    }
    spec.password_file.write_text("{not json")
    with pytest.raises(AirflowError, match=r"simple_auth_manager_passwords.json.generated"):
        ensure_admin_login(spec)


def test_dag_files_are_found_as_airflow_finds_them(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("from airflow.sdk import dag\n")
    (tmp_path / "sub" / "b.py").write_text("import airflow  # an Asset\n")
    (tmp_path / "helpers.py").write_text("def dag_name(): ...\n")  # no 'airflow': never parsed
    (tmp_path / "notes.txt").write_text("airflow dag")
    assert expected_dag_files(tmp_path) == {"a.py", "sub/b.py"}
    assert "mirrorflow_cluster_health.py" in expected_dag_files(DAGS_DIR)


def test_dag_report_matches_dags_and_import_errors_to_files(tmp_path: Path) -> None:
    dags = [
        {
            "dag_id": "b",
            "timetable_summary": "*/5 * * * *",
            "is_paused": False,
            "relative_fileloc": "b.py",
        },
        {"dag_id": "a", "timetable_summary": None, "is_paused": True, "relative_fileloc": "x/a.py"},
    ]
    errors = [
        {
            "filename": str(tmp_path / "broken.py"),
            "stack_trace": "Traceback ...\n  File ...\nNameError: name 'x' is not defined\n",
        }
    ]
    report = dag_report({"b.py", "x/a.py", "broken.py", "slow.py"}, dags, errors, dags_dir=tmp_path)
    assert [(d.dag_id, d.schedule, d.paused, d.file) for d in report.dags] == [
        ("a", None, True, "x/a.py"),
        ("b", "*/5 * * * *", False, "b.py"),
    ]
    assert report.import_errors == (("broken.py", "NameError: name 'x' is not defined"),)
    assert report.unregistered == ("slow.py",)


@pytest.mark.parametrize(
    ("health", "waiting"),
    [
        (None, ["api-server"]),
        (
            {
                "metadatabase": HEALTHY,
                "scheduler": HEALTHY,
                "dag_processor": HEALTHY,
                "triggerer": HEALTHY,
            },
            [],
        ),
        (
            {
                "metadatabase": HEALTHY,
                "scheduler": {"status": "unhealthy"},
                "dag_processor": HEALTHY,
            },
            ["scheduler", "triggerer"],
        ),
        (
            {
                "metadatabase": HEALTHY,
                "scheduler": HEALTHY,
                "dag_processor": {"status": None},
                "triggerer": HEALTHY,
            },
            ["dag-processor"],
        ),
    ],
)
def test_components_waiting(
    health: dict[str, dict[str, object]] | None, waiting: list[str]
) -> None:
    assert components_waiting(health) == waiting


def test_timeout_message_names_the_logs_to_read(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path)
    message = not_ready_message(spec, ["scheduler", "DAG file x.py"], 300)
    assert "after 300 s" in message and "scheduler, DAG file x.py" in message
    assert (
        str(spec.log_file("scheduler")) in message
        and str(spec.log_file("dag-processor")) in message
    )


def test_poll_until_ready_returns_once_ready_and_reports_what_it_waits_for() -> None:
    answers = [["scheduler"], ["scheduler"], []]
    notes: list[str] = []
    assert (
        poll_until_ready(lambda: answers.pop(0), 5, notes.append, interval=0.01, note_every=0) == []
    )
    assert notes and all("waiting for scheduler" in n for n in notes)


def test_poll_until_ready_gives_up_at_the_timeout_with_what_is_missing() -> None:
    assert poll_until_ready(lambda: ["api-server"], 0.05, interval=0.01) == ["api-server"]


def test_nothing_runs_in_a_fresh_home(tmp_path: Path) -> None:
    airflow = LocalAirflow(AirflowSpec(tmp_path))
    assert not airflow.is_set_up() and not airflow.is_running()
    assert set(airflow.pids().values()) == {None}
    assert airflow.stop() is False
    status = airflow.status()
    assert not status.running and status.health == {} and status.url == "http://127.0.0.1:18080"


def test_a_taken_port_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(
            UsageError, match=f"127.0.0.1:{port} is in use.*MIRRORFLOW_AIRFLOW_PORT"
        ):
            LocalAirflow(AirflowSpec(tmp_path, port=port)).launch()
    assert not (tmp_path / "airflow").exists()


def test_a_missing_airflow_executable_is_named(tmp_path: Path) -> None:
    spec = AirflowSpec(tmp_path / "home", port=_free_port(), bin_dir=tmp_path / "nowhere")
    with pytest.raises(AirflowError, match=f"no airflow executable at {tmp_path}/nowhere/airflow"):
        LocalAirflow(spec).launch()


def test_status_shows_no_airflow_before_it_was_ever_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MIRRORFLOW_DEV_PORTS", "primary=1,backup=3")  # nothing runs there
    assert main(["dev", "status", "--json", "--home", str(tmp_path)]) == 1
    assert [entry["name"] for entry in json.loads(capsys.readouterr().out)] == ["primary", "backup"]


def test_help_names_the_airflow_options(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, option in (
        (["dev", "up", "--help"], "--airflow"),
        (["demo", "--help"], "--no-airflow"),
    ):
        with pytest.raises(SystemExit):
            main(argv)
        shown = capsys.readouterr().out
        assert option in shown and "MIRRORFLOW_AIRFLOW_PORT" in shown


def _fake_airflow(tmp_path: Path, api_server: str) -> Path:
    """A stand-in ``airflow`` executable: ``db migrate`` succeeds, components run ``api_server``
    (the API server) or sleep, so start-up failures and stops are tested in a second."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "airflow"
    script.write_text(
        '#!/bin/sh\ncase "$1" in\n  db) exit 0 ;;\n'
        f"  api-server) {api_server} ;;\n  *) sleep 60 ;;\nesac\n"
    )
    script.chmod(0o755)
    return bin_dir


def _left_in(home: Path) -> list[int]:
    """Live processes whose working folder is ``home``."""
    left = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (
                os.readlink(f"/proc/{entry}/cwd") == str(home)
                and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                left.append(int(entry))
        except OSError:
            continue
    return left


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_component_that_dies_at_start_up_is_named_with_its_log(tmp_path: Path) -> None:
    bin_dir = _fake_airflow(tmp_path, 'echo "OSError: cannot bind"; exit 3')
    airflow = LocalAirflow(AirflowSpec(tmp_path / "home", port=_free_port(), bin_dir=bin_dir))
    try:
        login = airflow.launch()
        assert login.new_password is not None
        with pytest.raises(AirflowError) as failed:
            airflow.wait_ready(timeout=20)
        message = str(failed.value)
        assert "api-server exited during start-up" in message and "OSError: cannot bind" in message
        assert str(airflow.spec.log_file("api-server")) in message
    finally:
        assert airflow.stop() is True
    assert _left_in(airflow.spec.airflow_home) == []


def test_a_start_that_never_gets_ready_times_out_naming_the_log_and_stops_clean(
    tmp_path: Path,
) -> None:
    airflow = LocalAirflow(
        AirflowSpec(
            tmp_path / "home", port=_free_port(), bin_dir=_fake_airflow(tmp_path, "sleep 60")
        )
    )
    try:
        airflow.launch()
        assert (
            airflow.pids()["api-server"] and airflow.pids()["scheduler"] is None
        )  # not before the API
        with pytest.raises(
            AirflowError,
            match=r"not ready after 2 s, still waiting for api-server; "
            r"see .*/airflow/api-server\.log",
        ):
            airflow.wait_ready(timeout=2)
        assert len(_left_in(airflow.spec.airflow_home)) >= 3
    finally:
        assert airflow.stop() is True
    assert _left_in(airflow.spec.airflow_home) == []
    assert airflow.stop() is False and set(airflow.pids().values()) == {None}


def _ignores_sigint(pid: int) -> bool:
    """Whether the process ignores SIGINT (the SigIgn mask of /proc/<pid>/status)."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("SigIgn:"))
    return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)


def test_components_started_by_a_process_that_ignores_sigint_still_stop_on_it(tmp_path: Path) -> None:
    # A shell without job control (`make test &` in a script, a CI runner) starts us with SIGINT ignored; the
    # components inherited that, and each stop waited out the whole SIGINT grace before SIGTERM.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    bin_dir = _fake_airflow(tmp_path, "sleep 60")
    airflow = LocalAirflow(AirflowSpec(tmp_path / "home", port=_free_port(), bin_dir=bin_dir))
    try:
        airflow.launch()
        api = airflow.pids()["api-server"]
        assert api is not None and not _ignores_sigint(api)
    finally:
        assert airflow.stop() is True
        signal.signal(signal.SIGINT, previous)
    assert _left_in(airflow.spec.airflow_home) == []


# A session leader that ignores SIGINT and, after a moment, starts a child in a new process
# group, as Airflow's executor starts a queued task while it shuts down.
_LEADER = """
import signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(0.8)
child = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(60)"
subprocess.run([sys.executable, "-c", child], process_group=0)
"""


def test_stop_interrupts_a_process_group_created_after_the_first_sigint() -> None:
    leader = subprocess.Popen([sys.executable, "-c", _LEADER], start_new_session=True, stdout=subprocess.PIPE)
    assert leader.stdout is not None and leader.stdout.readline() == b"ready\n"  # SIGINT ignored from here
    began = time.monotonic()
    assert stop_sessions([{leader.pid}], set(), interrupt_grace=30, terminate_grace=5) == set()
    assert time.monotonic() - began < 10, "the late group waited for SIGTERM"
    assert session_members({leader.pid}) == {}


def test_stop_escalates_to_sigkill_for_what_ignores_sigint_and_sigterm() -> None:
    stubborn = (
        "import signal, time\n"
        "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\n"
        "time.sleep(60)\n"
    )
    leader = subprocess.Popen([sys.executable, "-c", stubborn], start_new_session=True)
    time.sleep(0.3)
    began = time.monotonic()
    assert stop_sessions([{leader.pid}], set(), interrupt_grace=0.5, terminate_grace=0.5) == set()
    assert time.monotonic() - began >= 1.0  # both graces passed: only SIGKILL ended it
    assert session_members({leader.pid}) == {} and proc_state(leader.pid) is None
