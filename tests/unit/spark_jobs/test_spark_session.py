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


def test_the_jobs_archive_holds_every_job_module_and_is_made_once_per_version(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import zipfile
    from pathlib import Path

    from spark_jobs.session import jobs_archive

    archive = jobs_archive(tmp_path)
    sources = sorted(Path(jobs_archive.__code__.co_filename).parent.glob("*.py"))
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == sorted(f"spark_jobs/{p.name}" for p in sources)
        assert opened.read("spark_jobs/backfill.py") == (sources[0].parent / "backfill.py").read_bytes()
    made = archive.stat().st_mtime_ns
    assert jobs_archive(tmp_path) == archive and archive.stat().st_mtime_ns == made  # not made again
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]  # no partial file left
