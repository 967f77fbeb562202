"""What ``dev up --airflow`` asks the local Airflow's REST API: health, a login, its DAGs.

The matching of the answers to the repository's DAG files is pure
(:func:`dag_report`, :func:`components_waiting`); :class:`AirflowRest` does the HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replicator.errors import MirrorFlowError
from replicator.paths import DAGS_DIR

ADMIN_USER = "admin"

# Keys of /api/v2/monitor/health -> (what the user is told is not ready, the log to read).
HEALTH_PARTS: dict[str, tuple[str, str]] = {
    "metadatabase": ("metadata DB", "api-server"),
    "scheduler": ("scheduler", "scheduler"),
    "dag_processor": ("dag-processor", "dag-processor"),
    "triggerer": ("triggerer", "triggerer"),
}


class AirflowError(MirrorFlowError):
    """The local Airflow could not be started, reached or stopped."""


@dataclass(frozen=True, slots=True)
class DagInfo:
    """One DAG as the API server lists it."""

    dag_id: str
    schedule: str | None
    paused: bool
    file: str


@dataclass(frozen=True, slots=True)
class DagReport:
    """What the DAG processor registered: DAGs, import errors, and files showing neither yet."""

    dags: tuple[DagInfo, ...]
    import_errors: tuple[tuple[str, str], ...]  # (file, last line of the error)
    unregistered: tuple[str, ...]


def expected_dag_files(dags_dir: Path = DAGS_DIR) -> set[str]:
    """The files of ``dags_dir`` that Airflow's DAG processor parses (its default heuristic)."""
    found = set()
    for path in dags_dir.rglob("*.py"):
        content = path.read_bytes().lower()
        if b"airflow" in content and (b"dag" in content or b"asset" in content):
            found.add(path.relative_to(dags_dir).as_posix())
    return found


def dag_report(
    expected: Iterable[str],
    dags: list[dict[str, Any]],
    import_errors: list[dict[str, Any]],
    dags_dir: Path = DAGS_DIR,
) -> DagReport:
    """Match the answers of ``/api/v2/dags`` and ``/api/v2/importErrors`` to DAG files (pure)."""
    infos = tuple(
        sorted(
            (
                DagInfo(
                    d["dag_id"],
                    d.get("timetable_summary"),
                    bool(d.get("is_paused")),
                    _relative(d.get("relative_fileloc") or d.get("fileloc") or "", dags_dir),
                )
                for d in dags
            ),
            key=lambda info: info.dag_id,
        )
    )
    errors = tuple(
        sorted(
            (_relative(e.get("filename") or "", dags_dir), _last_line(e.get("stack_trace") or ""))
            for e in import_errors
        )
    )
    seen = {info.file for info in infos} | {file for file, _ in errors}
    return DagReport(infos, errors, tuple(sorted(set(expected) - seen)))


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""


def _relative(path: str, dags_dir: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute() and candidate.is_relative_to(dags_dir):
        return candidate.relative_to(dags_dir).as_posix()
    return candidate.as_posix()


def components_waiting(health: Mapping[str, Any] | None) -> list[str]:
    """What is not healthy yet, from ``/api/v2/monitor/health`` (None: the API does not answer)."""
    if health is None:
        return ["api-server"]
    return [
        name
        for key, (name, _) in HEALTH_PARTS.items()
        if (health.get(key) or {}).get("status") != "healthy"
    ]


def read_passwords(path: Path) -> dict[str, str]:
    """The simple auth manager's ``user -> password`` file ({} when there is none)."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return {}
    try:
        passwords = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise AirflowError(f"{path}: not the JSON of the admin password ({exc.msg})") from exc
    if not isinstance(passwords, dict):
        raise AirflowError(f"{path}: expected a JSON object of user -> password")
    return {str(k): str(v) for k, v in passwords.items()}


class AirflowRest:
    """A small client of one API server; the admin password is read from its file per login."""

    def __init__(self, url: str, password_file: Path) -> None:
        self.url = url
        self.password_file = password_file
        # No proxy: $http_proxy must not catch a loopback address.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _request(
        self,
        method: str,
        path: str,
        body: object = None,
        token: str | None = None,
        timeout: float = 30.0,  # a busy 2-core machine: the API server can take seconds
    ) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        with self._opener.open(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")

    def health(self) -> dict[str, Any] | None:
        """``/api/v2/monitor/health``, or None when the API server does not answer."""
        try:
            answer = self._request("GET", "/api/v2/monitor/health", timeout=20.0)
        except (OSError, ValueError):  # refused, reset, timed out, half-written JSON
            return None
        return answer if isinstance(answer, dict) else None

    def token(self) -> str:
        """A JWT of the admin user (``POST /auth/token`` with the stored password)."""
        password = read_passwords(self.password_file).get(ADMIN_USER)
        if password is None:
            raise AirflowError(f"no {ADMIN_USER} password in {self.password_file}")
        try:
            answer = self._request(
                "POST", "/auth/token", {"username": ADMIN_USER, "password": password}
            )
        except urllib.error.HTTPError as exc:
            raise AirflowError(
                f"airflow refused the {ADMIN_USER} login of {self.password_file} (HTTP {exc.code})"
            ) from None
        except OSError as exc:
            raise AirflowError(f"airflow did not answer on {self.url}: {exc}") from None
        return str(answer["access_token"])

    def dags(self, token: str, expected: Iterable[str] = ()) -> DagReport:
        """The DAGs and import errors the API server knows, matched to ``expected`` files."""
        try:
            dags = self._request("GET", "/api/v2/dags?limit=1000", token=token)["dags"]
            errors = self._request("GET", "/api/v2/importErrors?limit=1000", token=token)[
                "import_errors"
            ]
        except OSError as exc:
            raise AirflowError(f"airflow did not list its DAGs on {self.url}: {exc}") from None
        return dag_report(expected, dags, errors)
