"""`mirrorflow dev up --airflow` as a user runs it: the repo's DAGs unpaused, a login printed once,
loopback only, a task that reaches the dev clusters, and `dev down` leaving no process.

One Airflow start for the whole module (it takes most of a minute on 2 cores), on free
ports and in a temporary home, so a developer's own clusters and Airflow are never touched.
The last test stops it; the fixture stops it too if a test failed earlier.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import free_port

pytestmark = [pytest.mark.airflow, pytest.mark.kafka]

DAGS = Path(__file__).resolve().parents[3] / "dags"
# How a DAG file declares its DAG: Airflow's decorator or class, or our runbook DAG builder
# (replicator/airflow/runbook_dag.py: dag_id first, no schedule).
DAG_NAMES = ("dag", "DAG", "runbook_dag")
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class DevAirflow:
    """The module's running dev environment and what `dev up --airflow` printed."""

    home: Path
    env: dict[str, str]
    url: str
    up: subprocess.CompletedProcess[str]

    @property
    def airflow_home(self) -> Path:
        return self.home.resolve() / "airflow"

    def password(self) -> str:
        found = re.search(r"login: admin / (\S+)", self.up.stdout)
        assert found, self.up.stdout
        return found.group(1)

    def leaders(self) -> dict[str, int]:
        return json.loads((self.airflow_home / "processes.json").read_text())["pids"]


def _mirrorflow(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run(
        [str(exe), *args, "--home", str(home)], capture_output=True, text=True, env=env, timeout=600
    )


def _api(url: str, method: str = "GET", body: object = None, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"} | (
        {"Authorization": f"Bearer {token}"} if token else {}
    )
    data = None if body is None else json.dumps(body).encode()
    # 60 s: on a busy 2-core machine Airflow's SQLite writers can hold the API server for 15 s,
    # and it answers 500 when its metadata DB stays locked past its own timeout (the write was
    # rolled back): asked again then, up to three times.
    for attempt in range(3):
        request = urllib.request.Request(url, data, headers, method=method)
        try:
            with _NO_PROXY.open(request, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            if exc.code < 500 or attempt == 2:
                raise
            print(f"{method} {url}: {exc.code}, asking again: {exc.read()[:500]!r}")
            time.sleep(2)


def _token(dev: DevAirflow) -> str:
    answer = _api(
        f"{dev.url}/auth/token", "POST", {"username": "admin", "password": dev.password()}
    )
    return str(answer["access_token"])


def _dag_calls(tree: ast.Module) -> Iterator[tuple[ast.Call, str | None]]:
    """Each call, once; a decorator comes with its function's name (a bare ``@dag`` as a call)."""
    decorators: dict[int, tuple[ast.Call, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                call = d if isinstance(d, ast.Call) else ast.Call(func=d, args=[], keywords=[])
                decorators[id(d)] = (call, node.name)
                if not isinstance(d, ast.Call):
                    yield call, node.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield decorators.get(id(node), (node, None))


def _repo_dags() -> dict[str, str | None]:
    """dag_id -> literal schedule of each ``@dag``, ``DAG(...)`` or ``runbook_dag(...)`` in dags/ (read, not
    imported)."""
    found: dict[str, str | None] = {}
    for path in DAGS.rglob("*.py"):
        for call, function in _dag_calls(ast.parse(path.read_text())):
            if (
                getattr(call.func, "id", None) or getattr(call.func, "attr", None)
            ) not in DAG_NAMES:
                continue
            keywords = {k.arg: k.value for k in call.keywords}
            dag_id = keywords.get("dag_id") or (call.args[0] if call.args else None)
            schedule = keywords.get("schedule")
            name = dag_id.value if isinstance(dag_id, ast.Constant) else function
            found[str(name)] = schedule.value if isinstance(schedule, ast.Constant) else None
    return found


def _files_holding(dev: DevAirflow, secret: str) -> list[Path]:
    """Every file under the dev home that contains ``secret`` (logs, DBs, configs)."""
    files = (path for path in dev.home.resolve().rglob("*") if path.is_file())
    return [path for path in files if secret.encode() in path.read_bytes()]


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _processes_of(dev: DevAirflow, sessions: set[int]) -> set[int]:
    """Live processes in ``sessions``, or whose working folder or command line is Airflow's."""
    home = str(dev.home.resolve())
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(int(entry))
        if stat is None or stat[0] == "Z":
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if (
            int(stat[3]) in sessions
            or cwd.startswith(f"{home}/airflow")
            or f"{home}/airflow" in cmdline
        ):
            found.add(int(entry))
    return found


def _listening(pids: set[int]) -> set[str]:
    """``address:port`` of every TCP socket in LISTEN state held by ``pids``."""
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                addresses.add(_address(fields[1]))
    return addresses


def _address(hex_address: str) -> str:
    ip, port = hex_address.split(":")
    if len(ip) == 8:
        text = ".".join(str(b) for b in reversed(bytes.fromhex(ip)))
    else:
        words = [bytes.fromhex(ip[i : i + 8])[::-1].hex() for i in range(0, 32, 8)]
        text = "[" + "".join(words) + "]"
    return f"{text}:{int(port, 16)}"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevAirflow]:
    home = tmp_path_factory.mktemp("airflow-dev") / "home"
    port = free_port()
    env = {
        **os.environ,
        "MIRRORFLOW_DEV_PORTS": f"primary={free_port()},backup={free_port()}",
        "MIRRORFLOW_AIRFLOW_PORT": str(port),
    }
    began = time.monotonic()
    up = _mirrorflow(home, env, "dev", "up", "--airflow")
    print(f"dev up --airflow: {time.monotonic() - began:.1f} s")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield DevAirflow(home, env, f"http://127.0.0.1:{port}", up)
    finally:
        _mirrorflow(home, env, "dev", "down")


def test_up_prints_the_url_and_the_new_password_once_and_logs_keep_it_out(dev: DevAirflow) -> None:
    assert dev.url in dev.up.stdout and "mirrorflow_cluster_health" in dev.up.stdout
    password = dev.password()
    password_file = dev.airflow_home / "simple_auth_manager_passwords.json.generated"
    assert json.loads(password_file.read_text()) == {"admin": password}
    assert oct(password_file.stat().st_mode & 0o777) == "0o600"
    assert dev.up.stdout.count(password) == 1 and password not in dev.up.stderr
    assert _files_holding(dev, password) == [password_file]


def test_rest_login_lists_every_repo_dag_unpaused_with_its_schedule(dev: DevAirflow) -> None:
    token = _token(dev)
    listed = {
        d["dag_id"]: d for d in _api(f"{dev.url}/api/v2/dags?limit=1000", token=token)["dags"]
    }
    errors = _api(f"{dev.url}/api/v2/importErrors", token=token)["import_errors"]
    expected = _repo_dags()
    assert "mirrorflow_cluster_health" in expected
    for dag_id, schedule in expected.items():
        assert dag_id in listed, f"{dag_id} is not listed; import errors: {errors}"
        dag = listed[dag_id]
        assert dag["is_paused"] is False, dag_id
        assert Path(dag["fileloc"]).parent == DAGS
        if schedule is not None:
            assert dag["timetable_summary"] == schedule, dag_id
    assert not set(listed) - set(expected), "examples or foreign DAGs are loaded"


def test_airflow_listens_on_its_loopback_port_only(dev: DevAirflow) -> None:
    processes = _processes_of(dev, set(dev.leaders().values()))
    assert len(processes) >= 4
    assert _listening(processes) == {f"127.0.0.1:{dev.url.rsplit(':', 1)[1]}"}


def test_a_dag_run_reaches_the_dev_clusters(dev: DevAirflow) -> None:
    """The task gets the dev config and the execution API; the health check needs both clusters."""
    token = _token(dev)
    dag_runs = f"{dev.url}/api/v2/dags/mirrorflow_cluster_health/dagRuns"
    run = _api(dag_runs, "POST", {"logical_date": None}, token=token)
    deadline = time.monotonic() + 300
    while run["state"] not in ("success", "failed") and time.monotonic() < deadline:
        time.sleep(3)
        run = _api(f"{dag_runs}/{run['dag_run_id']}", token=_token(dev))
    tasks = _api(f"{dag_runs}/{run['dag_run_id']}/taskInstances", token=_token(dev))[
        "task_instances"
    ]
    states = {(t["task_id"], t["map_index"]): t["state"] for t in tasks}
    assert run["state"] == "success", states
    assert states == {
        ("cluster_names", -1): "success",
        ("check", 0): "success",
        ("check", 1): "success",
        ("report", -1): "success",
    }
    # The scheduler starts once the API answers: no task, not even the first runs queued at
    # start-up, ever failed to reach the execution API.
    assert "ConnectError" not in (dev.airflow_home / "scheduler.log").read_text()


def test_a_task_that_meets_a_mirrorflow_error_says_it_in_one_line_of_its_log_no_traceback(
    dev: DevAirflow,
) -> None:
    """A real task process (the scheduler's, under Airflow's supervisor), not dag.test(): the task log file
    holds the error once, at ERROR, and no traceback; the task failed."""
    token = _token(dev)
    dag_runs = f"{dev.url}/api/v2/dags/mirrorflow_metadata_sync/dagRuns"
    run = _api(dag_runs, "POST", {"logical_date": None, "conf": {"route": "no-such-route"}}, token=token)
    deadline = time.monotonic() + 300
    while run["state"] not in ("success", "failed") and time.monotonic() < deadline:
        time.sleep(3)
        run = _api(f"{dag_runs}/{run['dag_run_id']}", token=_token(dev))
    tasks = _api(f"{dag_runs}/{run['dag_run_id']}/taskInstances", token=_token(dev))["task_instances"]
    states = {t["task_id"]: t["state"] for t in tasks}
    assert run["state"] == "failed" and states["routes"] == "failed", states
    [log] = [
        path
        for path in (dev.airflow_home / "logs").rglob("*.log")
        if "dag_id=mirrorflow_metadata_sync" in str(path)
        and "task_id=routes" in str(path)
        and run["dag_run_id"] in str(path)
    ]
    text = log.read_text()
    said = [line for line in text.splitlines() if "no-such-route" in line]
    assert len(said) == 1 and '"level":"error"' in said[0].replace(" ", ""), text[-3000:]
    assert "unknown route" in said[0] or "no route" in said[0], said[0]
    assert "Traceback" not in text and "ConfigError" not in text, text[-3000:]


def test_second_up_is_harmless_and_only_says_where_the_password_is(dev: DevAirflow) -> None:
    before = dev.leaders()
    again = _mirrorflow(dev.home, dev.env, "dev", "up", "--airflow")
    assert again.returncode == 0, again.stderr
    assert "airflow already running" in again.stdout and dev.url in again.stdout
    assert dev.password() not in again.stdout + again.stderr
    assert "simple_auth_manager_passwords.json.generated" in again.stdout
    assert dev.leaders() == before


def test_status_shows_airflow_running_and_healthy(dev: DevAirflow) -> None:
    done = _mirrorflow(dev.home, dev.env, "dev", "status", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    airflow = {entry["name"]: entry for entry in json.loads(done.stdout)}["airflow"]
    assert airflow["running"] is True and airflow["url"] == dev.url
    assert airflow["pids"] == dev.leaders()
    assert set(airflow["health"].values()) == {"healthy"}
    text = _mirrorflow(dev.home, dev.env, "dev", "status")
    assert f"{dev.url}  running, healthy" in text.stdout


def test_down_leaves_no_airflow_process(dev: DevAirflow) -> None:
    sessions = set(dev.leaders().values())
    assert _processes_of(dev, sessions)
    began = time.monotonic()
    down = _mirrorflow(dev.home, dev.env, "dev", "down")
    print(f"dev down: {time.monotonic() - began:.1f} s")
    assert down.returncode == 0 and "stopped airflow" in down.stdout, down.stdout + down.stderr
    assert _processes_of(dev, sessions) == set()
    stopped = _mirrorflow(dev.home, dev.env, "dev", "status", "--json")
    airflow = {entry["name"]: entry for entry in json.loads(stopped.stdout)}["airflow"]
    assert airflow["running"] is False and set(airflow["pids"].values()) == {None}
    # Task runs and the second `dev up` wrote logs since the first test: still only its file.
    assert _files_holding(dev, dev.password()) == [
        dev.airflow_home / "simple_auth_manager_passwords.json.generated"
    ]
