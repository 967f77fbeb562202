"""Airflow 3 on loopback for development: ``mirrorflow dev up --airflow`` and the demo.

The four processes of Airflow (api-server, scheduler, dag-processor, triggerer) run
the repository's ``dags/`` and ``plugins/`` against their own SQLite metadata DB.
Everything lives in ``<home>/airflow``::

    airflow.cfg, airflow.db          Airflow's config (secrets generated once) and metadata DB
    <component>.log, db-migrate.log  what each process writes
    logs/                            Airflow's own task and DAG-processor logs
    simple_auth_manager_passwords.json.generated   the admin password (mode 0600)
    processes.json                   the API port and the pid of each process

Not ``airflow standalone``: it starts two log servers on fixed ports (8793, 8794)
bound to every interface, and an interrupted standalone waits on its children's
zombies. Here each process starts in its own session (``setsid``) with log serving
off, so everything it forks (executor workers, task processes) is found and stopped
by session id (:mod:`replicator.dev.process_tree`).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replicator.config import CONFIG_ENV
from replicator.dev.airflow_rest import (
    ADMIN_USER,
    HEALTH_PARTS,
    AirflowError,
    AirflowRest,
    DagReport,
    components_waiting,
    expected_dag_files,
    read_passwords,
)
from replicator.dev.devenv import dev_config_path
from replicator.dev.process_tree import children_interruptible, is_session_leader, session_members, stop_sessions
from replicator.errors import UsageError
from replicator.paths import DAGS_DIR, PLUGINS_DIR, REPO_ROOT

log = logging.getLogger(__name__)

PORT_ENV = "MIRRORFLOW_AIRFLOW_PORT"
DEFAULT_PORT = 18080
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# Started only once the API answers: a task it queues at once would find no API to report to
# (connection refused, a failed first attempt in the UI).
LATE_COMPONENT = "scheduler"
STARTUP_TIMEOUT_S = 300.0
DAG_GRACE_S = 60.0  # once healthy: how long each DAG file gets to show a DAG or an import error
# Measured on 2 busy cores: 4-13 s, most of it the triggerer's fixed 10 s wait for its triggers.
SIGINT_GRACE_S = 20.0
SIGTERM_GRACE_S = 10.0
LOG_ROTATE_BYTES = 10 * 1024 * 1024
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def parse_port(text: str | None) -> int:
    """The API port from ``$MIRRORFLOW_AIRFLOW_PORT`` (default 18080)."""
    if not text:
        return DEFAULT_PORT
    if not text.strip().isdigit() or not 0 < int(text) < 65536:
        raise UsageError(f"{PORT_ENV}: expected a port number (1-65535), got {text!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class AirflowSpec:
    """Where and how the local Airflow runs; ``home`` is the dev home (``.mirrorflow``)."""

    home: Path
    port: int = DEFAULT_PORT
    host: str = "127.0.0.1"
    parallelism: int = 2  # task slots: a 2-core machine also runs the brokers and workers
    bin_dir: Path = field(default_factory=lambda: Path(sys.executable).parent)

    @property
    def airflow_home(self) -> Path:
        """AIRFLOW_HOME: config, metadata DB, logs, login."""
        return self.home.resolve() / "airflow"

    @property
    def url(self) -> str:
        """The API server and UI."""
        return f"http://{self.host}:{self.port}"

    @property
    def password_file(self) -> Path:
        """The simple auth manager's passwords (Airflow's default name and place)."""
        return self.airflow_home / "simple_auth_manager_passwords.json.generated"

    @property
    def config_path(self) -> Path:
        """The mirrorflow.yaml that tasks get as $MIRRORFLOW_CONFIG (written by ``dev up``)."""
        return dev_config_path(self.home).resolve()

    def log_file(self, component: str) -> Path:
        """What one process writes (stdout and stderr)."""
        return self.airflow_home / f"{component}.log"


def airflow_env(spec: AirflowSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of every process of the local Airflow (pure).

    ``base`` loses its own ``AIRFLOW*`` variables: a shell set up for another Airflow
    must not hand its database, config file or connections to this one.
    """
    env = {key: value for key, value in base.items() if not key.startswith("AIRFLOW")}
    home = spec.airflow_home
    python_path = [str(REPO_ROOT), *filter(None, [base.get("PYTHONPATH")])]
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW_CONFIG": str(home / "airflow.cfg"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS_DIR),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(spec.parallelism),
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(spec.password_file),
            # Tasks reach the API server here; Airflow assumes port 8080 otherwise.
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{spec.url}/execution/",
            "AIRFLOW__API__HOST": spec.host,
            "AIRFLOW__API__PORT": str(spec.port),
            "AIRFLOW__API__BASE_URL": spec.url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            # A new DAG file shows within 30 s instead of 5 min.
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            CONFIG_ENV: str(spec.config_path),
            # Tasks import replicator from this checkout, installed or not.
            "PYTHONPATH": os.pathsep.join(python_path),
            "PATH": os.pathsep.join([str(spec.bin_dir), base.get("PATH", os.defpath)]),
            "PYTHONUNBUFFERED": "1",  # so a log tail explains a failed start
        }
    )
    return env


def component_command(spec: AirflowSpec, component: str) -> list[str]:
    """The command line of one Airflow process (pure); nothing listens beyond ``spec.host``."""
    options = {
        "api-server": ["--host", spec.host, "--port", str(spec.port)],
        # Log servers bind every interface; the API server reads task logs from disk here.
        "scheduler": ["--skip-serve-logs"],
        "triggerer": ["--skip-serve-logs"],
        "dag-processor": [],
    }
    return [str(spec.bin_dir / "airflow"), component, *options[component]]


def not_ready_message(spec: AirflowSpec, waiting: list[str], timeout: float) -> str:
    """The error of a start that timed out, naming the log of each part still waiting (pure)."""
    logs = {name: log_of for name, log_of in HEALTH_PARTS.values()} | {"api-server": "api-server"}
    files = sorted({str(spec.log_file(logs.get(item, "dag-processor"))) for item in waiting})
    return (
        f"airflow was not ready after {timeout:.0f} s, still waiting for {', '.join(waiting)}; "
        f"see {', '.join(files)} (`mirrorflow dev down` stops what did start)"
    )


def poll_until_ready(
    check: Callable[[], list[str]],
    timeout: float,
    progress: Progress = _quiet,
    interval: float = 1.0,
    note_every: float = 10.0,
) -> list[str]:
    """Call ``check`` (what is still missing) until it returns nothing or ``timeout`` passes.

    Says what it waits for every ``note_every`` seconds; returns what was still missing
    at the deadline ([] when ready).
    """
    began = time.monotonic()
    next_note = began + note_every
    while True:
        waiting = check()
        now = time.monotonic()
        if not waiting or now - began >= timeout:
            return waiting
        if now >= next_note:
            progress(f"  airflow: waiting for {', '.join(waiting)} ({now - began:.0f} s)")
            next_note = now + note_every
        time.sleep(interval)


@dataclass(frozen=True, slots=True)
class AdminLogin:
    """The admin login; ``new_password`` is set only by the call that created it."""

    user: str
    password_file: Path
    new_password: str | None = field(default=None, repr=False)


def ensure_admin_login(spec: AirflowSpec) -> AdminLogin:
    """Create the admin password once (mode 0600), before Airflow would print its own to a log."""
    passwords = read_passwords(spec.password_file)
    if ADMIN_USER in passwords:
        return AdminLogin(ADMIN_USER, spec.password_file)
    alphabet = "abcdefghkmnpqrstuvwxyzABCDEFGHKMNPQRSTUVWXYZ23456789"  # no look-alikes
    password = "".join(secrets.choice(alphabet) for _ in range(20))
    spec.password_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(spec.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({**passwords, ADMIN_USER: password}) + "\n")
    return AdminLogin(ADMIN_USER, spec.password_file, password)


@dataclass(frozen=True, slots=True)
class AirflowStatus:
    """What ``dev status`` shows of the local Airflow."""

    name: str
    url: str
    running: bool  # every component runs
    pids: dict[str, int | None]
    health: dict[str, str]  # from the API server; empty when it does not answer
    home: str
    password_file: str


class LocalAirflow:
    """Start, stop and inspect the local Airflow of one dev home."""

    def __init__(self, spec: AirflowSpec) -> None:
        self.spec = spec
        self._home = spec.airflow_home
        self._env = airflow_env(spec, os.environ)
        self.rest = AirflowRest(spec.url, spec.password_file)
        self._started: set[str] = set()  # by this object's launch(), or found running by it
        self._spawned = False
        self._launched_at = time.monotonic()

    @classmethod
    def of_home(cls, home: Path, port: int = DEFAULT_PORT) -> LocalAirflow:
        """The Airflow of ``home``: on the port it runs on, else on ``port``."""
        airflow = cls(AirflowSpec(home, port))
        running_port = airflow._state().get("port")
        if isinstance(running_port, int) and running_port != port and any(airflow.pids().values()):
            return cls(AirflowSpec(home, running_port))
        return airflow

    @property
    def _state_file(self) -> Path:
        return self._home / "processes.json"

    def _state(self) -> dict[str, Any]:
        try:
            state = json.loads(self._state_file.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def is_set_up(self) -> bool:
        """True once Airflow was started in this home (its folder exists)."""
        return self._home.exists()

    def pids(self) -> dict[str, int | None]:
        """The pid of each running component (None when it does not run)."""
        recorded = self._state().get("pids") or {}
        return {c: recorded.get(c) if self._is_ours(recorded.get(c)) else None for c in COMPONENTS}

    def _is_ours(self, pid: object) -> bool:
        # A recycled pid belongs to someone else: ours leads its own session in our folder.
        if not isinstance(pid, int) or not is_session_leader(pid):
            return False
        try:
            return Path(os.readlink(f"/proc/{pid}/cwd")) == self._home
        except OSError:
            return False

    def is_running(self) -> bool:
        """True when every component runs (not necessarily ready)."""
        return all(self.pids().values())

    def launch(self, progress: Progress = _quiet) -> AdminLogin:
        """Start the components that do not run (a fresh start migrates the DB first).

        Returns without waiting; :meth:`wait_ready` completes the start (the scheduler
        follows once the API answers).
        """
        pids = self.pids()
        missing = [c for c, pid in pids.items() if pid is None]
        self._started = {c for c, pid in pids.items() if pid is not None}
        self._launched_at = time.monotonic()
        if len(missing) == len(COMPONENTS):
            self._check_can_start()
            self._migrate(progress)
        login = ensure_admin_login(self.spec)  # before the API server, or it logs one of its own
        if not missing:
            progress(f"airflow already running on {self.spec.url}")
            return login
        progress(f"starting airflow ({', '.join(missing)}) on {self.spec.url} ...")
        for component in missing:
            if component != LATE_COMPONENT:
                pids[component] = self._spawn(component)
        self._record(pids)
        return login

    def _record(self, pids: Mapping[str, int | None]) -> None:
        self._state_file.write_text(json.dumps({"port": self.spec.port, "pids": dict(pids)}) + "\n")
        log.info("airflow processes home=%s url=%s pids=%s", self._home, self.spec.url, dict(pids))

    def _check_can_start(self) -> None:
        airflow = self.spec.bin_dir / "airflow"
        if not os.access(airflow, os.X_OK):
            raise AirflowError(f"no airflow executable at {airflow}: run `make setup`")
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT is no owner
            try:
                probe.bind((self.spec.host, self.spec.port))
            except OSError:
                raise UsageError(
                    f"{self.spec.host}:{self.spec.port} is in use by another program; "
                    f"choose a free port for Airflow with {PORT_ENV}=PORT"
                ) from None

    def _migrate(self, progress: Progress) -> None:
        progress("airflow: preparing its metadata DB (airflow db migrate) ...")
        self._home.mkdir(parents=True, exist_ok=True)
        out_file = self.spec.log_file("db-migrate")
        with open(out_file, "wb") as out:
            done = subprocess.run(
                [str(self.spec.bin_dir / "airflow"), "db", "migrate"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._home,
                timeout=STARTUP_TIMEOUT_S,
                check=False,
            )
        if done.returncode != 0:
            raise AirflowError(
                f"airflow db migrate failed (exit {done.returncode}); last lines of "
                f"{out_file}:\n{_tail(out_file)}"
            )

    def _spawn(self, component: str) -> int:
        out_file = self.spec.log_file(component)
        if out_file.exists() and out_file.stat().st_size > LOG_ROTATE_BYTES:
            out_file.replace(out_file.with_name(out_file.name + ".1"))
        children_interruptible()  # stop() interrupts them first
        with open(out_file, "ab") as out:
            process = subprocess.Popen(
                component_command(self.spec, component),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._home,
                start_new_session=True,  # detached, and its whole process tree findable by session
            )
        self._started.add(component)
        self._spawned = True
        return process.pid

    def wait_ready(
        self, timeout: float = STARTUP_TIMEOUT_S, progress: Progress = _quiet
    ) -> DagReport:
        """Wait until every component is healthy and each DAG file has registered.

        Raises AirflowError, naming the log to read, when a component exits or the
        components are not healthy within ``timeout``. A DAG file that shows neither a
        DAG nor an import error within DAG_GRACE_S is reported, not an error.
        """

        def components() -> list[str]:
            pids = self.pids()
            self._fail_if_exited(pids)
            health = self.rest.health()
            if health is not None and pids[LATE_COMPONENT] is None:
                self._record({**pids, LATE_COMPONENT: self._spawn(LATE_COMPONENT)})
            return components_waiting(health)

        waiting = poll_until_ready(components, timeout, progress)
        if waiting:
            raise AirflowError(not_ready_message(self.spec, waiting, timeout))
        report = self._wait_dags(DAG_GRACE_S if self._spawned else 0.0, progress)
        if self._spawned:
            progress(f"airflow ready in {time.monotonic() - self._launched_at:.1f} s")
        return report

    def _wait_dags(self, grace: float, progress: Progress) -> DagReport:
        """The DAG report once each DAG file registered, or as it stands after ``grace``."""
        expected = expected_dag_files()
        report: DagReport | None = None

        def dag_files() -> list[str]:
            nonlocal report
            try:
                report = self.rest.dags(self.rest.token(), expected)
            except AirflowError as exc:  # a busy machine: the API server answers late
                return [f"the DAG list ({exc})"]
            return [f"DAG file {name}" for name in report.unregistered]

        poll_until_ready(dag_files, grace, progress)
        return report or self.rest.dags(self.rest.token(), expected)

    def _fail_if_exited(self, pids: Mapping[str, int | None]) -> None:
        for component, pid in pids.items():
            if pid is None and component in self._started:
                raise AirflowError(
                    f"airflow {component} exited during start-up (`mirrorflow dev down` stops "
                    f"the rest); last lines of {self.spec.log_file(component)}:\n"
                    f"{_tail(self.spec.log_file(component))}"
                )

    def stop(self, progress: Progress = _quiet) -> bool:
        """Stop every process of this Airflow, leaving none; True if any ran.

        Tasks running at that moment are interrupted. The API server stops last: the
        task processes report to it while they stop.
        """
        recorded = {
            c: pid for c, pid in (self._state().get("pids") or {}).items() if isinstance(pid, int)
        }
        leaders = {c: pid for c, pid in recorded.items() if self._is_ours(pid)}
        # A leader that died may leave children behind: those still in our folder are ours too.
        dead = set(recorded.values()) - set(leaders.values())
        strays = {pid for pid in session_members(dead) if self._in_home(pid)}
        if not leaders and not strays:
            self._state_file.unlink(missing_ok=True)
            return False
        progress("stopping airflow ...")
        began = time.monotonic()
        api = {pid for c, pid in leaders.items() if c == "api-server"}
        waves = [set(leaders.values()) - api, api]
        left = stop_sessions(waves, strays, SIGINT_GRACE_S, SIGTERM_GRACE_S)
        if left:
            raise AirflowError(f"airflow processes {sorted(left)} survived SIGKILL")
        self._state_file.unlink(missing_ok=True)
        progress(f"stopped airflow in {time.monotonic() - began:.1f} s")
        return True

    def _in_home(self, pid: int) -> bool:
        try:
            return Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(self._home)
        except OSError:
            return False

    def status(self) -> AirflowStatus:
        """Pids, liveness and (when the API answers) the health of each component."""
        pids = self.pids()
        health = self.rest.health() if pids["api-server"] else None
        return AirflowStatus(
            name="airflow",
            url=self.spec.url,
            running=all(pids.values()),
            pids=pids,
            health={
                name: str((health.get(key) or {}).get("status"))
                for key, (name, _) in HEALTH_PARTS.items()
            }
            if health
            else {},
            home=str(self._home),
            password_file=str(self.spec.password_file),
        )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log written)"
    return "\n".join(text[-lines:]) or "(empty log)"
