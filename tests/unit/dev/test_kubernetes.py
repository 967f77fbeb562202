"""docker/kubernetes/ is never applied here: validated with kubeconform against the Kubernetes API schemas and
the ServiceMonitor CRD (tests/kubeconform.py), and checked against the code the way the compose file is
(tests/kube_checks.py). Each check is proven on a broken copy too."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.compose_secrets import secret_literal_problems_in
from tests.kube_checks import (
    KUBE_DIR,
    Doc,
    KubeCheck,
    command_problems,
    config_problems,
    image_problems,
    load_manifests,
    metrics_problems,
    of_kind,
    resource_problems,
    secret_command_problems,
    selector_problems,
    stop_problems,
)
from tests.kubeconform import REPO, kubeconform_problems, missing_tools

MANIFESTS = sorted(KUBE_DIR.glob("*.yaml"))
README = (KUBE_DIR / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def docs() -> list[Doc]:
    return load_manifests()


@pytest.fixture(scope="module")
def validator() -> None:
    missing = missing_tools()
    assert not missing, "cannot validate the manifests:\n" + "\n".join(missing)


def test_the_fleet_is_a_statefulset_with_its_config_service_monitor_and_budget(docs: list[Doc]) -> None:
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["ConfigMap", "PodDisruptionBudget", "Service", "ServiceMonitor", "StatefulSet"], kinds


def test_the_manifests_are_valid_kubernetes_objects(validator: None, tmp_path: Path) -> None:
    problems = kubeconform_problems(MANIFESTS, tmp_path)
    assert not problems, "\n".join(problems)


def _write(docs: list[Doc], folder: Path) -> list[Path]:
    folder.mkdir()
    (folder / "all.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return [folder / "all.yaml"]


@pytest.mark.parametrize(("kind", "mutate", "expected"), [
    ("StatefulSet", lambda d: d["spec"].update(replica=2), "additional properties 'replica' not allowed"),
    ("StatefulSet", lambda d: d["spec"].update(replicas="2"), "at '/spec/replicas': got string"),
    ("ServiceMonitor", lambda d: d["spec"]["endpoints"][0].update(prot="metrics"),
     "additional properties 'prot' not allowed"),
    ("ServiceMonitor", lambda d: d["spec"].update(endpoints={"port": "metrics"}), "want array"),
    ("Service", lambda d: d.update(kind="Servise"), "could not find schema for Servise"),
], ids=["unknown-field", "wrong-type", "crd-unknown-field", "crd-wrong-type", "unknown-kind"])
def test_kubeconform_reports_a_broken_manifest(validator: None, docs: list[Doc], tmp_path: Path, kind: str,
                                               mutate: Callable[[Doc], None], expected: str) -> None:
    broken = copy.deepcopy(docs)
    mutate(of_kind(broken, kind)[0])
    problems = kubeconform_problems(_write(broken, tmp_path / "broken"), tmp_path / "work")
    assert any(expected in p for p in problems), problems


CHECKS = [command_problems, config_problems, metrics_problems, selector_problems, image_problems, stop_problems,
          resource_problems]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_the_manifests_agree_with_the_code(docs: list[Doc], check: KubeCheck) -> None:
    problems = check(docs)
    assert not problems, "\n".join(problems)


def test_the_readme_creates_the_secret_the_pods_read(docs: list[Doc]) -> None:
    problems = secret_command_problems(docs, README)
    assert not problems, "\n".join(problems)


def test_no_password_is_written_in_the_manifests() -> None:
    problems = [p for path in MANIFESTS for p in secret_literal_problems_in(path, REPO)]
    assert not problems, "\n".join(problems)


def _sts(docs: list[Doc]) -> Doc:
    return of_kind(docs, "StatefulSet")[0]


def _pod(docs: list[Doc]) -> Doc:
    return _sts(docs)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _worker(docs: list[Doc]) -> Doc:
    return _pod(docs)["containers"][0]  # type: ignore[no-any-return]


def _init(docs: list[Doc]) -> Doc:
    return _pod(docs)["initContainers"][0]  # type: ignore[no-any-return]


def _config(docs: list[Doc]) -> Doc:
    return of_kind(docs, "ConfigMap")[0]["data"]  # type: ignore[no-any-return]


BROKEN = [
    (command_problems, lambda d: _worker(d)["command"].append("--no-such-option"), "unrecognized arguments", "command"),
    (command_problems, lambda d: _worker(d).update(env=[]), "worker id None", "worker-id"),
    (command_problems, lambda d: _init(d).update(command=["mirrorflow", "config", "check"]), "db upgrade",
     "no-db-upgrade"),
    (config_problems, lambda d: _config(d).update({"mirrorflow.yaml": _config(d)["mirrorflow.yaml"].replace(
        "primary-sasl-password", "primary-password")}), "primary-password: not mounted", "secret-key"),
    (config_problems, lambda d: _pod(d)["volumes"][1]["secret"].update(items=[]), "not mounted", "secret-items"),
    (config_problems, lambda d: _config(d).update({"mirrorflow.yaml": _config(d)["mirrorflow.yaml"].replace(
        "routes:", "rutes:")}), "unknown key", "config-key"),
    (config_problems, lambda d: _worker(d)["command"].__setitem__(3, "/etc/mirrorflow/m.yaml"),
     "not in a ConfigMap", "config-path"),
    (metrics_problems, lambda d: _worker(d)["command"].__setitem__(5, "9200"), "the worker serves 9200", "port"),
    (metrics_problems, lambda d: _worker(d)["readinessProbe"]["httpGet"].update(path="/"), "readinessProbe asks",
     "probe-path"),
    (metrics_problems, lambda d: of_kind(d, "ServiceMonitor")[0]["spec"]["endpoints"][0].update(port="web"),
     "scrapes port 'web'", "monitor-port"),
    (selector_problems, lambda d: _sts(d)["spec"].update(serviceName="workers"), "is no headless Service",
     "service-name"),
    (selector_problems, lambda d: of_kind(d, "Service")[0]["spec"].update(selector={"app": "x"}),
     "does not select the pods", "service-selector"),
    (selector_problems, lambda d: of_kind(d, "ServiceMonitor")[0]["spec"]["selector"].update(
        matchLabels={"app": "x"}), "selects no label set", "monitor-selector"),
    (image_problems, lambda d: _worker(d).update(image="mirrorflow:latest"), "the Dockerfile builds", "image"),
    (stop_problems, lambda d: _pod(d).pop("terminationGracePeriodSeconds"), "terminationGracePeriodSeconds 30",
     "grace"),
    (resource_problems, lambda d: _init(d)["resources"].pop("limits"), "no limits.cpu", "resources"),
]


@pytest.mark.parametrize(("check", "mutate", "expected"), [b[:3] for b in BROKEN], ids=[b[3] for b in BROKEN])
def test_each_check_reports_a_broken_copy(docs: list[Doc], check: KubeCheck, mutate: Callable[[list[Doc]], None],
                                          expected: str) -> None:
    broken = copy.deepcopy(docs)
    mutate(broken)
    problems = check(broken)
    assert any(expected in p for p in problems), problems


def test_a_readme_out_of_step_with_the_secret_is_reported(docs: list[Doc]) -> None:
    assert any("the pods read" in p for p in secret_command_problems(docs, README.replace("ca.crt=", "ca.pem=")))
    assert any("no `kubectl create secret generic mirrorflow-secrets`" in p
               for p in secret_command_problems(docs, README.replace("generic mirrorflow-secrets", "generic x")))
