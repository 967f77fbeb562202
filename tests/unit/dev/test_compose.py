"""docker-compose.yml cannot be started here (no Docker engine): check it against the repo.

Each check is a function that returns the disagreements it finds, one readable
line each, so a failure says what to fix. The last tests run every check on a
broken copy of the file too, which proves that none of them passes vacuously.
The Spark checks run the image's Spark (this venv's PySpark: `spark-class CLASS
--help`, a JVM that prints its usage) and Airflow's Spark provider.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from tests.compose_checks import (
    APP_DIR,
    DOCKER_CONFIG,
    ENV_EXAMPLE,
    KAFKA_IMAGE,
    REPO,
    Check,
    Compose,
    Mutation,
    bind_mounts,
    command_problems,
    dev_port_problems,
    image_problems,
    kafka_services,
    kafka_version_problems,
    load_compose,
    metrics_endpoints,
    mirrorflow_argvs,
    mount_problems,
    scrape_problems,
    services,
)
from tests.compose_configs import (
    bootstrap_problems,
    config_problems,
    config_refs,
    filled_env,
    load_ref,
    read_env_file,
    work_dir_problems,
)
from tests.compose_health import (
    depends_on_problems,
    healthcheck_problems,
    long_running,
    restart_problems,
    stop_grace_problems,
)
from tests.compose_secrets import (
    default_password_problems,
    env_example_problems,
    env_file_problems,
    raw_compose,
    secret_declaration_problems,
    secret_literal_problems,
    secret_literal_problems_in,
)
from tests.spark_checks import (
    MASTER_CLASS,
    WORKER_CLASS,
    driver_host_problems,
    masters,
    spark_class_problems,
    spark_connection_problems,
    spark_daemons,
)


@pytest.fixture(scope="module")
def compose() -> Compose:
    """The parsed compose file (once: every test only reads it)."""
    return load_compose()


def test_every_service_has_an_image_or_a_buildable_context(compose: Compose) -> None:
    problems = image_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_bind_mounts_exist_in_the_repo(compose: Compose) -> None:
    assert any(bind_mounts(s) for s in services(compose).values()), "no bind mount at all"
    problems = mount_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_mirrorflow_commands_parse(compose: Compose) -> None:
    assert mirrorflow_argvs(compose), "no `mirrorflow ...` command in any service"
    problems = command_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_referenced_configs_load_with_the_service_environment(compose: Compose) -> None:
    loaded = {ref.host_path for ref in config_refs(compose, REPO)}
    assert DOCKER_CONFIG in loaded, f"no service loads {DOCKER_CONFIG.relative_to(REPO)}"
    problems = config_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_kafka_image_matches_pom(compose: Compose) -> None:
    assert kafka_services(compose), f"no service runs {KAFKA_IMAGE}"
    problems = kafka_version_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_clusters_use_the_dev_ports_on_the_host(compose: Compose) -> None:
    problems = dev_port_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_config_clusters_are_compose_listeners(compose: Compose) -> None:
    problems = bootstrap_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_prometheus_scrapes_every_worker(compose: Compose) -> None:
    assert len(metrics_endpoints(compose)) >= 2, "the compose file runs fewer than two metered workers"
    problems = scrape_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_spark_daemons_run_with_the_options_they_take(compose: Compose) -> None:
    classes = sorted(cls for cls, _ in spark_daemons(compose).values())
    assert classes == [MASTER_CLASS, WORKER_CLASS], f"the file runs {classes}, not one master and one worker"
    problems = spark_class_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_airflow_submits_to_the_spark_master(compose: Compose) -> None:
    assert masters(compose), "no Spark master"
    problems = spark_connection_problems(compose, REPO)
    assert not problems, "\n".join(problems)


def test_every_long_running_service_has_a_health_check_it_can_run(compose: Compose) -> None:
    assert {"worker-1", "worker-2", "spark-master", "spark-worker", "prometheus", "grafana"} <= set(
        long_running(compose)), sorted(long_running(compose))
    problems = healthcheck_problems(compose, REPO)
    assert not problems, "\n".join(problems)


# Checks with no precondition of their own: the driver reachable by the executors, start order on health,
# restart policies, the DAGs' job files on a writable mount, the workers' stop grace, passwords as secrets.
AGREEING: list[Check] = [driver_host_problems, depends_on_problems, restart_problems, work_dir_problems,
                         stop_grace_problems, secret_declaration_problems, default_password_problems]


@pytest.mark.parametrize("check", AGREEING, ids=[c.__name__ for c in AGREEING])
def test_the_file_agrees_with_the_code(compose: Compose, check: Check) -> None:
    problems = check(compose, REPO)
    assert not problems, "\n".join(problems)


def test_the_real_env_file_is_neither_committed_nor_built_in() -> None:
    problems = env_file_problems(REPO)
    assert not problems, "\n".join(problems)


def test_no_password_is_written_in_the_deployment_files() -> None:
    problems = secret_literal_problems(REPO)
    assert not problems, "\n".join(problems)


def test_the_env_example_defines_every_variable_and_no_password() -> None:
    problems = env_example_problems(raw_compose(), read_env_file(ENV_EXAMPLE))
    assert not problems, "\n".join(problems)


def test_the_state_db_password_flows_from_the_env_file(compose: Compose) -> None:
    # env file -> compose secret -> /run/secrets file -> ${file:} in the config -> the state URL
    env = filled_env(REPO)
    for ref in config_refs(compose, REPO, env):
        assert env["MIRRORFLOW_PG_PASSWORD"] in load_ref(ref).state.url, ref.service


def test_a_secured_cluster_reads_the_sasl_password_from_the_env_file(compose: Compose, tmp_path: Path) -> None:
    # The lines docker/mirrorflow.yaml's comments give a secured cluster, on cluster primary.
    secured = DOCKER_CONFIG.read_text(encoding="utf-8").replace(
        'primary: {bootstrap.servers: "primary:9092"}',
        'primary: {bootstrap.servers: "primary:9092", security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512,'
        ' sasl.username: mirrorflow, sasl.password: "${file:/run/secrets/kafka_sasl_password}"}')
    assert "kafka_sasl_password" in secured
    config = tmp_path / "docker" / "mirrorflow.yaml"
    config.parent.mkdir()
    config.write_text(secured, encoding="utf-8")
    env = filled_env(REPO)
    for ref in config_refs(compose, REPO, env):
        loaded = load_ref(dataclasses.replace(ref, host_path=config))
        assert loaded.cluster("primary").properties["sasl.password"] == env["KAFKA_SASL_PASSWORD"], ref.service


def test_dockerfile_copies_the_repo_where_the_paths_assume() -> None:
    # container_to_host maps /opt/mirrorflow/... to the repo: true only if the image copies it there
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    copies = re.findall(r"(?m)^COPY\s+(?:--\S+\s+)*\.\s+(\S+?)/?\s*$", dockerfile)
    assert str(APP_DIR) in copies, f"Dockerfile copies the repo to {copies}, tests assume {APP_DIR}"


# --- each check catches a broken copy -------------------------------------------------


def _parent(doc: Compose, path: str) -> tuple[dict[str, Any], str]:
    """The mapping that holds the dotted ``path`` (``services.primary.image``), and its last key."""
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    return node, last


def _set(path: str, value: Any) -> Mutation:
    """A mutation that sets the value at a dotted path of the copy."""

    def mutate(doc: Compose) -> None:
        node, key = _parent(doc, path)
        node[key] = value

    return mutate


def _delete(path: str) -> Mutation:
    """A mutation that deletes the key at a dotted path of the copy."""

    def mutate(doc: Compose) -> None:
        node, key = _parent(doc, path)
        del node[key]

    return mutate


def _rename_service(old: str, new: str) -> Mutation:
    """A mutation that renames a service, as if the config named a service that is gone."""

    def mutate(doc: Compose) -> None:
        doc["services"][new] = doc["services"].pop(old)

    return mutate


BACKUP_ENV = "services.backup.environment"
ADVERTISED = f"{BACKUP_ENV}.KAFKA_ADVERTISED_LISTENERS"
BROKEN = [
    pytest.param(image_problems, _delete("services.postgres.image"), "neither", id="no-image"),
    pytest.param(image_problems, _set("services.airflow.build", "nowhere"), "nowhere", id="build"),
    pytest.param(
        mount_problems, _set("services.mirrorflow-init.volumes", ["./nowhere:/x"]), "nowhere",
        id="mount",
    ),
    pytest.param(
        mount_problems, _set("services.postgres.volumes", ["pg:/var/lib/postgresql/data"]), "'pg'",
        id="undeclared-volume",
    ),
    pytest.param(
        command_problems, _set("services.mirrorflow-init.command", "mirrorflow db upgrad"),
        "invalid choice", id="command",
    ),
    pytest.param(
        config_problems, _delete("services.airflow.secrets"), "not mounted in the container", id="config-secret",
    ),
    pytest.param(
        config_problems, _set("services.airflow.environment.MIRRORFLOW_CONFIG", "/etc/m.yaml"),
        "neither bind-mounted", id="config-path",
    ),
    pytest.param(
        kafka_version_problems, _set("services.backup.image", "apache/kafka:3.9.0"), "3.9.0",
        id="kafka-version",
    ),
    pytest.param(
        dev_port_problems, _set("services.primary.ports", ["19093:19092"]), "[19093]",
        id="host-port",
    ),
    pytest.param(
        dev_port_problems,
        _set(ADVERTISED, "INTERNAL://backup:9092,HOST://localhost:1"),
        "localhost:1,",
        id="advertised-port",
    ),
    pytest.param(
        dev_port_problems,
        _set(f"{BACKUP_ENV}.KAFKA_LISTENERS", "INTERNAL://:9092,CONTROLLER://:9093,HOST://:9094"),
        "binds port 9094",
        id="bound-port",
    ),
    pytest.param(
        scrape_problems, _set("services.worker-2.command", ["mirrorflow", "run", "--metrics-port", "9999"]),
        "does not scrape worker worker-2:9999", id="scrape-missing",
    ),
    pytest.param(
        scrape_problems, _delete("services.worker-1"), "scrapes worker-1:9108, which is no worker",
        id="scrape-extra",
    ),
    pytest.param(
        bootstrap_problems, _rename_service("primary", "kafka1"), "is no compose service",
        id="service-name",
    ),
    pytest.param(
        bootstrap_problems,
        _set(ADVERTISED, "INTERNAL://backup:9095,HOST://localhost:29092"),
        "not an advertised listener",
        id="internal-port",
    ),
    pytest.param(
        spark_class_problems, _set("services.spark-worker.command",
                                   ["spark-class", WORKER_CLASS, "--web-ui-port", "8081", "spark://spark-master:7077"]),
        "unknown option --web-ui-port", id="spark-option",
    ),
    pytest.param(
        spark_class_problems, _set("services.spark-worker.command", ["spark-class", WORKER_CLASS, "--cores", "2"]),
        "takes 1 argument(s) (master)", id="spark-worker-master-missing",
    ),
    pytest.param(
        spark_class_problems, _set("services.spark-worker.command",
                                   ["spark-class", WORKER_CLASS, "spark://spark-master:7078"]),
        "worker of spark://spark-master:7078", id="spark-worker-master-port",
    ),
    pytest.param(
        spark_class_problems, _set("services.spark-master.command",
                                   ["spark-class", "org.apache.spark.deploy.master.Main"]),
        "ClassNotFoundException", id="spark-class-name",
    ),
    pytest.param(
        spark_class_problems, _set("services.spark-master.command", ["spark-class", MASTER_CLASS, "--host", "master"]),
        "listens as 'master'", id="spark-master-host",
    ),
    pytest.param(
        spark_connection_problems,
        _set("services.airflow.environment.AIRFLOW_CONN_SPARK_DEFAULT",
             '{"conn_type": "spark", "host": "spark://spark-master"}'),
        "submits to spark://spark-master,", id="spark-connection-port",
    ),
    pytest.param(
        spark_connection_problems,
        _set("services.airflow.environment.AIRFLOW_CONN_SPARK_DEFAULT",
             '{"conn_type": "spark", "host": "spark://spark-master", "port": 7077, '
             '"extra": {"deploy-mode": "cluster"}}'),
        "submits in cluster mode", id="spark-connection-cluster-mode",
    ),
    pytest.param(
        spark_connection_problems, _delete("services.airflow.environment.AIRFLOW_CONN_SPARK_DEFAULT"),
        "no AIRFLOW_CONN_SPARK_DEFAULT", id="spark-connection-missing",
    ),
    pytest.param(
        driver_host_problems, _delete("services.airflow.environment.SPARK_LOCAL_IP"), "binds loopback",
        id="driver-bind",
    ),
    pytest.param(
        driver_host_problems, _set("services.airflow.environment.SPARK_LOCAL_HOSTNAME", "localhost"),
        "cannot resolve", id="driver-host",
    ),
    pytest.param(healthcheck_problems, _delete("services.spark-worker.healthcheck"), "no health check",
                 id="health-missing"),
    pytest.param(
        healthcheck_problems,
        _set("services.worker-1.healthcheck.test", ["CMD", "curl", "-f", "http://localhost:9108/metrics"]),
        "runs 'curl'", id="health-program",
    ),
    pytest.param(
        healthcheck_problems, _set("services.worker-2.command",
                                   ["mirrorflow", "run", "--worker-id", "w2", "--metrics-port", "9109"]),
        "serves port 9109 /metrics", id="health-port",
    ),
    pytest.param(depends_on_problems, _set("services.grafana.depends_on", ["prometheus"]), "not healthy",
                 id="depends-on-started"),
    pytest.param(work_dir_problems, _delete("services.airflow.environment.MIRRORFLOW_WORK_DIR"),
                 "on the read-only mount /opt/mirrorflow/docker", id="work-dir"),
    pytest.param(restart_problems, _delete("services.spark-master.restart"), "stays down", id="restart"),
    pytest.param(stop_grace_problems, _delete("services.worker-1.stop_grace_period"), "Docker kills it",
                 id="stop-grace"),
    pytest.param(secret_declaration_problems, _delete("secrets.kafka_sasl_password"), "is not declared",
                 id="secret-undeclared"),
    pytest.param(
        secret_declaration_problems, _set("secrets.grafana_admin_password", {"file": "./docker/grafana.password"}),
        "not from a variable", id="secret-file",
    ),
    pytest.param(default_password_problems, _delete("services.grafana.environment"), "default password",
                 id="default-password"),
]


@pytest.mark.parametrize(("check", "mutate", "expected"), BROKEN)
def test_each_check_reports_a_broken_copy(
    compose: Compose, check: Check, mutate: Mutation, expected: str
) -> None:
    # Counted against the real file's own problems, so this holds even while the real file fails.
    before = [p for p in check(compose, REPO) if expected in p]
    broken = copy.deepcopy(compose)
    mutate(broken)
    after = [p for p in check(broken, REPO) if expected in p]
    assert len(after) > len(before), f"no new problem mentioning {expected!r} in {after}"


# --- the file checks, on broken copies of the files ----------------------------------


def test_a_password_written_in_a_deployment_file_is_reported(tmp_path: Path) -> None:
    written = [
        ("docker-compose.yml", "services:\n  pg:\n    environment:\n      POSTGRES_PASSWORD: hunter2\n",
         "POSTGRES_PASSWORD: a literal value"),
        ("docker-compose.yml", "services:\n  pg:\n    environment: [\"DB_PASSWORD=${DB_PASSWORD:-hunter2}\"]\n",
         "a default value 'hunter2'"),
        ("docker/m.yaml", "state: {url: 'postgresql://u:hunter2@db/x'}\n", "a URL with a password in it"),
        ("docker/k.yaml", "env: [{name: SASL_PASSWORD, value: hunter2}]\n", "SASL_PASSWORD: a literal value"),
    ]
    for name, text, expected in written:
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        assert any(expected in p for p in secret_literal_problems_in(path, tmp_path)), (name, text)


def test_an_env_example_out_of_step_is_reported() -> None:
    raw, example = raw_compose(), read_env_file(ENV_EXAMPLE)
    missing = {k: v for k, v in example.items() if k != "GRAFANA_ADMIN_PASSWORD"}
    assert any("does not define GRAFANA_ADMIN_PASSWORD" in p for p in env_example_problems(raw, missing))
    assert any("defines UNUSED" in p for p in env_example_problems(raw, {**example, "UNUSED": ""}))
    filled = {**example, "MIRRORFLOW_PG_PASSWORD": "s3cret"}
    assert any("MIRRORFLOW_PG_PASSWORD holds a value" in p for p in env_example_problems(raw, filled))


def test_an_env_file_that_git_or_docker_would_take_is_reported(tmp_path: Path) -> None:
    for name in (".gitignore", ".dockerignore"):
        (tmp_path / name).write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert not env_file_problems(tmp_path)
    (tmp_path / ".dockerignore").write_text(".git\n.cache\n", encoding="utf-8")
    assert env_file_problems(tmp_path) == [
        ".dockerignore: does not exclude docker/mirrorflow.env, which holds the stack's passwords"]
