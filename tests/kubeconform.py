"""Validating Kubernetes manifests with kubeconform, offline (used by tests/unit/dev/test_kubernetes.py).

- kubeconform itself: built from source by `make kubeconform` (Go module proxy) into .cache/bin;
- the Kubernetes API's JSON schemas: those the PyPI package kubernetes-validate ships
  (``kubernetes-json-schema/v1.NN.0-local-strict/<kind>-<group>-<version>.json``). Each file's ``$ref``s point
  into ``/api/_definitions.json`` against its ``$id`` (https://kubernetes.io/api/...), so kubeconform would
  fetch ``https://kubernetes.io/api/_definitions.json``: its HTTP cache (``-cache``, a file per URL, named by
  the URL's SHA-256) is seeded with the package's ``_definitions.json`` of that version, so it never goes out;
- the ServiceMonitor's schema: the openAPIV3Schema of prometheus-operator's CRD (fetched by `make kubeconform`),
  made strict as the Kubernetes ones are (an object lists all its fields), written where
  ``-schema-location`` finds it.

Run with ``-strict`` (unknown fields, duplicate keys) on pinned Kubernetes versions, never with
``-ignore-missing-schemas``: a kind without a schema is an error.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from tests.compose_checks import REPO

KUBECONFORM = REPO / ".cache" / "bin" / "kubeconform"
CRDS = REPO / ".cache" / "kubernetes" / "crds"
# The oldest and the newest Kubernetes whose schemas kubernetes-validate ships: the manifests must hold on both.
KUBERNETES_VERSIONS = ("1.25.0", "1.37.0")
DEFINITIONS_URL = "https://kubernetes.io/api/_definitions.json"
SCHEMA_FILE = "{{ .ResourceKind }}{{ .KindSuffix }}.json"  # kubeconform's names: statefulset-apps-v1.json


def kubernetes_schemas() -> Path | None:
    """The schema folders of the kubernetes-validate package (None when it is not installed)."""
    try:
        import kubernetes_validate
    except ImportError:
        return None
    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def missing_tools() -> list[str]:
    """What is missing to validate, each with how to get it."""
    missing = []
    if not KUBECONFORM.is_file():
        go = "" if shutil.which("go") else " (it builds kubeconform from source: install Go 1.23 or newer first)"
        missing.append(f"{KUBECONFORM.relative_to(REPO)} is missing: run `make kubeconform`{go}")
    if not any(CRDS.glob("*.yaml")):
        missing.append(f"no CRD in {CRDS.relative_to(REPO)}: run `make kubeconform` (it needs Go)")
    if kubernetes_schemas() is None:
        missing.append("the package kubernetes-validate is not installed: `pip install -e '.[dev]'`")
    return missing


def crd_schemas(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """kubeconform file name -> strict JSON schema, for each version of a CustomResourceDefinition."""
    spec = crd["spec"]
    kind, group = spec["names"]["kind"].lower(), spec["group"].split(".")[0]
    return {f"{kind}-{group}-{version['name']}.json": strict(version["schema"]["openAPIV3Schema"])
            for version in spec["versions"] if version.get("schema")}


def strict(schema: Any) -> Any:
    """The schema with every object closed to fields it does not list (what the -strict Kubernetes schemas
    do), except where the CRD keeps unknown fields; OpenAPI's ``nullable`` as JSON schema's null type."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if "properties" in out and "additionalProperties" not in out and \
            not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def write_crd_schemas(folder: Path) -> None:
    """The JSON schema of every CRD fetched by `make kubeconform`, into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            for name, schema in crd_schemas(crd).items():
                (folder / name).write_text(json.dumps(schema), encoding="utf-8")


def seeded_cache(folder: Path, version: str) -> Path:
    """kubeconform's HTTP cache holding the package's _definitions.json of ``version`` under its URL."""
    schemas = kubernetes_schemas()
    assert schemas is not None, missing_tools()
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(DEFINITIONS_URL.encode()).hexdigest()
    shutil.copyfile(schemas / f"v{version}-local-strict" / "_definitions.json", folder / key)
    return folder


def kubeconform_problems(files: Iterable[Path], work: Path) -> list[str]:
    """Every resource of ``files`` that is not valid on each pinned Kubernetes version, one line each."""
    schemas = kubernetes_schemas()
    assert schemas is not None, missing_tools()
    write_crd_schemas(work / "crds")
    files = list(files)
    documents = sum(1 for f in files for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")) if doc)
    problems = []
    for version in KUBERNETES_VERSIONS:
        done = subprocess.run(
            [str(KUBECONFORM), "-strict", "-output", "json", "-verbose", "-kubernetes-version", version,
             "-cache", str(seeded_cache(work / f"cache-{version}", version)),
             "-schema-location", f"{schemas}/{{{{ .NormalizedKubernetesVersion }}}}-local{{{{ .StrictSuffix }}}}/"
                                 f"{SCHEMA_FILE}",
             "-schema-location", f"{work / 'crds'}/{SCHEMA_FILE}", *map(str, files)],
            capture_output=True, text=True, timeout=120, check=False)
        resources = json.loads(done.stdout or "{}").get("resources", [])
        problems += [f"Kubernetes {version}: {Path(r['filename']).name}: {r['kind']} {r['name']}: "
                     f"{r['status'].removeprefix('status')}: {r['msg']}"
                     for r in resources if r["status"] != "statusValid"]
        if len(resources) != documents:
            problems.append(f"Kubernetes {version}: kubeconform saw {len(resources)} resources of {documents}")
        if done.returncode != 0 and not problems:
            problems.append(f"Kubernetes {version}: kubeconform exits {done.returncode}: {done.stderr.strip()}")
    return problems
