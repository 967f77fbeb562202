"""docker-compose.yml cannot be started here (no Docker engine): check it against the repo.

Each check is a function that returns the disagreements it finds, one readable
line each, so a failure says what to fix. The last test runs every check on a
broken copy of the file too, which proves that none of them passes vacuously.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tests.compose_checks import (
    APP_DIR,
    DOCKER_CONFIG,
    KAFKA_IMAGE,
    REPO,
    Check,
    Compose,
    Mutation,
    bind_mounts,
    bootstrap_problems,
    command_problems,
    config_problems,
    config_refs,
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
        config_problems, _delete("services.airflow.environment.MIRRORFLOW_PG_PASSWORD"),
        "MIRRORFLOW_PG_PASSWORD is not set", id="config-env",
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
