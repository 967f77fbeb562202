"""The Spark standalone cluster of docker-compose.yml, checked against the Spark the image runs (this venv's
PySpark, the pin the image installs) and against the Airflow provider that submits to it.

- ``spark-class`` command lines: each class exists and takes the options given, as its own ``--help`` says
  (run once per class: a JVM that prints its usage and exits, no server);
- the worker's master URL and the ``spark_default`` connection name the master's service and port, as the
  provider's ``SparkSubmitHook`` turns the connection into ``spark-submit --master``;
- a client-mode driver (the service that submits) is reachable by the executors: it binds all interfaces
  (``SPARK_LOCAL_IP=0.0.0.0``; ``spark_jobs/session.py`` makes that ``spark.driver.bindAddress``) and names
  itself by a name the others resolve (``SPARK_LOCAL_HOSTNAME``, which Spark's ``spark.driver.host`` defaults
  to; without it the driver would advertise 0.0.0.0).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from unittest.mock import patch

from tests.compose_checks import Compose, Service, argvs, environment, services

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
CONNECTION_ENV = "AIRFLOW_CONN_SPARK_DEFAULT"  # Airflow reads connection spark_default from it
ANY_ADDRESS = "0.0.0.0"

_OPTION = re.compile(r"^\s{2}(-{1,2}\w.*?)(?:\s{2,}(.*))?$")
_DEFAULT = re.compile(r"\(default: ([^)]+)\)")


@dataclass(frozen=True)
class Usage:
    """What a Spark daemon's ``--help`` says it takes."""

    options: dict[str, tuple[str, bool]]  # every spelling -> (long name, takes a value)
    positionals: tuple[str, ...]  # the <names> of its "Usage:" line
    defaults: dict[str, str] = field(default_factory=dict)  # long name -> "(default: X)"


def spark_home() -> Path:
    """The Spark installation of this venv's PySpark (the one the image installs)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


@functools.cache
def usage(class_name: str) -> Usage | str:
    """``spark-class CLASS --help`` parsed; a string saying why when the class does not run."""
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([str(spark_home() / "bin" / "spark-class"), class_name, "--help"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    text = done.stdout + done.stderr
    head = next((line for line in text.splitlines() if line.startswith("Usage: ")), None)
    if done.returncode != 0 or head is None:
        last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
        return f"`spark-class {class_name} --help` exits {done.returncode}: {last[0].strip()}"
    return _parse_usage(head, text)


def _parse_usage(head: str, text: str) -> Usage:
    options: dict[str, tuple[str, bool]] = {}
    defaults = {}
    for line in text[text.index("Options:"):].splitlines()[1:] if "Options:" in text else []:
        found = _OPTION.match(line)
        if not found:
            continue
        spellings = [s.split() for s in found.group(1).split(", ")]
        long_name = next((s[0] for s in spellings if s[0].startswith("--")), spellings[0][0])
        for spelling in spellings:
            options[spelling[0]] = (long_name, len(spelling) > 1)
        if found.group(2) and (default := _DEFAULT.search(found.group(2))):
            defaults[long_name] = default.group(1)
    return Usage(options, tuple(re.findall(r"<(\w+)>", head)), defaults)


def parse_args(use: Usage, args: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """``args`` by ``use``: (long option -> value, positionals, problems)."""
    values: dict[str, str] = {}
    positionals: list[str] = []
    problems: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            positionals.append(arg)
        elif arg not in use.options:
            problems.append(f"unknown option {arg}")
        elif use.options[arg][1] and not rest:
            problems.append(f"{arg} needs a value")
        else:
            values[use.options[arg][0]] = rest.pop(0) if use.options[arg][1] else ""
    if len(positionals) != len(use.positionals):
        problems.append(f"takes {len(use.positionals)} argument(s) ({' '.join(use.positionals) or 'none'}), "
                        f"given {positionals}")
    return values, positionals, problems


def spark_daemons(compose: Compose) -> dict[str, tuple[str, list[str]]]:
    """Services that run ``spark-class CLASS ARGS``: name -> (CLASS, ARGS)."""
    out = {}
    for name, service in services(compose).items():
        for argv in argvs(service):
            if argv and PurePosixPath(argv[0]).name == "spark-class" and len(argv) > 1:
                out[name] = (argv[1], argv[2:])
    return out


def daemon_options(class_name: str, args: list[str]) -> dict[str, str]:
    """A daemon's options as given, with the defaults its usage states for the rest."""
    use = usage(class_name)
    if isinstance(use, str):
        return {}
    values, _, _ = parse_args(use, args)
    return {**use.defaults, **values}


def masters(compose: Compose) -> dict[str, str]:
    """``spark://service:port`` of each service that runs the Master class -> the service."""
    return {f"spark://{name}:{daemon_options(cls, args).get('--port', '')}": name
            for name, (cls, args) in spark_daemons(compose).items() if cls == MASTER_CLASS}


def spark_class_problems(compose: Compose, repo: Path) -> list[str]:
    """Each ``spark-class`` line runs a class that exists with options it takes; a worker names a master of the
    file; a master listens under its service's name."""
    problems = []
    known = masters(compose)
    for name, (cls, args) in spark_daemons(compose).items():
        use = usage(cls)
        if isinstance(use, str):
            problems.append(f"service {name}: {use}")
            continue
        values, positionals, found = parse_args(use, args)
        problems += [f"service {name}: `spark-class {cls}`: {p}" for p in found]
        if cls == MASTER_CLASS and values.get("--host", name) not in _names(name, services(compose)[name]):
            problems.append(f"service {name}: the master listens as {values['--host']!r}, which is not its service"
                            f" name (workers and drivers reach it as {name})")
        if cls == WORKER_CLASS and positionals and positionals[0] not in known:
            problems.append(f"service {name}: worker of {positionals[0]}, but the file's masters are "
                            f"{sorted(known) or 'none'}")
    return problems


def _names(name: str, service: Service) -> set[str]:
    """The names other containers resolve to this service."""
    return {name, str(service.get("hostname", name)), str(service.get("container_name", name))}


def submit_command(connection: str) -> list[str]:
    """The ``spark-submit`` command line Airflow's Spark provider builds from ``connection`` (the JSON of
    ``AIRFLOW_CONN_SPARK_DEFAULT``) for an application."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    with patch.dict(os.environ, {CONNECTION_ENV: connection}):
        return list(SparkSubmitHook(conn_id="spark_default")._build_spark_submit_command("job.py"))


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def submitters(compose: Compose) -> dict[str, str]:
    """Services that run Airflow (its DAGs submit the Spark jobs): name -> their spark_default connection."""
    return {name: environment(service).get(CONNECTION_ENV, "")
            for name, service in services(compose).items()
            if any(argv[:1] == ["airflow"] for argv in argvs(service))}


def spark_connection_problems(compose: Compose, repo: Path) -> list[str]:
    """When the file runs a Spark master, each Airflow service's spark_default connection submits to it, in
    client mode (the driver reads the job's spec and writes its result in the DAG's work folder)."""
    known = masters(compose)
    if not known:
        return []
    problems = []
    for name, connection in submitters(compose).items():
        if not connection:
            problems.append(f"service {name}: no {CONNECTION_ENV}: its DAGs run Spark on local[2], not on "
                            f"{sorted(known)}")
            continue
        command = submit_command(connection)
        master = _flag(command, "--master")
        if master not in known:
            problems.append(f"service {name}: {CONNECTION_ENV} submits to {master}, but the file's masters are "
                            f"{sorted(known)}")
        if _flag(command, "--deploy-mode") == "cluster":
            problems.append(f"service {name}: {CONNECTION_ENV} submits in cluster mode: the driver would run on a "
                            f"Spark worker, which cannot read the job's spec nor write its result where the DAG "
                            f"reads it (client mode, the default, runs it here)")
    return problems


def driver_host_problems(compose: Compose, repo: Path) -> list[str]:
    """A service that submits in client mode (the default) to a cluster runs the driver: the executors must
    reach it, so it binds all interfaces and advertises its own service name."""
    problems = []
    for name, connection in submitters(compose).items():
        if not connection:
            continue
        command = submit_command(connection)
        master = _flag(command, "--master") or ""
        if master.startswith("local") or _flag(command, "--deploy-mode") == "cluster":
            continue
        env = environment(services(compose)[name])
        if env.get("SPARK_LOCAL_IP") != ANY_ADDRESS:
            problems.append(f"service {name}: SPARK_LOCAL_IP is {env.get('SPARK_LOCAL_IP')!r}: the driver binds "
                            f"loopback and the executors of {master} cannot reach it (set {ANY_ADDRESS})")
        if env.get("SPARK_LOCAL_HOSTNAME") not in _names(name, services(compose)[name]):
            problems.append(f"service {name}: SPARK_LOCAL_HOSTNAME is {env.get('SPARK_LOCAL_HOSTNAME')!r}: the "
                            f"driver advertises a name the executors cannot resolve (set {name!r})")
    return problems
