"""A DAG task meeting a MirrorFlow error fails with it in one log line (Airflow logs no traceback for a
SystemExit); a bug keeps its traceback."""

from __future__ import annotations

import inspect
import logging

import pytest

from replicator.airflow.task_errors import said_in_one_line
from replicator.errors import ClusterError, ConfigError


def test_a_mirrorflow_error_is_one_error_line_and_the_task_exits_with_its_code(
        caplog: pytest.LogCaptureFixture) -> None:
    @said_in_one_line
    def body(route: str, params: dict[str, object] | None = None) -> dict[str, object]:
        raise ClusterError(f"route {route}: source cluster 'eu': authentication failed")

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as exited:
        body("r")
    assert exited.value.code == 1
    assert [r.getMessage() for r in caplog.records] == ["route r: source cluster 'eu': authentication failed"]
    with pytest.raises(SystemExit) as exited:
        said_in_one_line(lambda: (_ for _ in ()).throw(ConfigError("bad")))()
    assert exited.value.code == 2


def test_a_bug_keeps_its_traceback_and_airflow_sees_the_task_s_own_signature() -> None:
    @said_in_one_line
    def body(route: str, params: dict[str, object] | None = None) -> dict[str, object]:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        body("r")
    assert list(inspect.signature(body).parameters) == ["route", "params"] and body.__name__ == "body"
