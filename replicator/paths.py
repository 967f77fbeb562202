"""Folders of a MirrorFlow checkout that the code reads at run time."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = REPO_ROOT / "sql"
DAGS_DIR = REPO_ROOT / "dags"
PLUGINS_DIR = REPO_ROOT / "plugins"
SPARK_JOBS_DIR = REPO_ROOT / "spark_jobs"
