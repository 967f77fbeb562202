"""Which master a Spark job's session gets: spark-submit's --master is never overridden unasked."""

from __future__ import annotations

import pytest

from spark_jobs.session import session_master

SUBMITTED = {"PYSPARK_GATEWAY_PORT": "40123"}  # what spark-submit sets for the Python driver


@pytest.mark.parametrize(("master", "environ", "expected"), [
    (None, {}, "local[2]"),
    (None, {"MIRRORFLOW_SPARK_MASTER": "local[1]"}, "local[1]"),
    ("spark://h:7077", {"MIRRORFLOW_SPARK_MASTER": "local[1]"}, "spark://h:7077"),
    (None, SUBMITTED, None),
    (None, {**SUBMITTED, "MIRRORFLOW_SPARK_MASTER": "local[1]"}, None),
    ("yarn", SUBMITTED, "yarn"),
])
def test_session_master(master: str | None, environ: dict[str, str], expected: str | None) -> None:
    assert session_master(master, environ) == expected
