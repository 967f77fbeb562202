"""The Replication page's FastAPI app, in process: Airflow's login check guards every answer.

The authorized cases stand in for Airflow's check (FastAPI's dependency override of
``AUTHORIZED``); the real login is tested against a running Airflow in
tests/integration/ui/test_replication_page.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from replicator.ui.app import API_PATH, AUTHORIZED, PAGE_PATH, create_app
from tests.ui_seed import ROUTE, seed


@pytest.fixture
def state_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    seed(url, dt.datetime.now(dt.UTC))
    return url


def _client(app: FastAPI, authorized: bool) -> Iterator[TestClient]:
    if authorized:
        app.dependency_overrides[AUTHORIZED] = lambda: None
    with TestClient(app) as client:
        yield client


@pytest.fixture
def anonymous(state_db: str) -> Iterator[TestClient]:
    yield from _client(create_app(lambda: state_db), authorized=False)


@pytest.fixture
def user(state_db: str) -> Iterator[TestClient]:
    yield from _client(create_app(lambda: state_db), authorized=True)


@pytest.mark.parametrize("path", [PAGE_PATH, API_PATH])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Basic YWRtaW46YWRtaW4="}])
def test_an_anonymous_request_gets_401_and_no_data(anonymous: TestClient, headers: dict[str, str],
                                                   path: str) -> None:
    answer = anonymous.get(path, params={"route": ROUTE}, headers=headers)
    assert answer.status_code == 401
    assert ROUTE not in answer.text and "40-41" not in answer.text


def test_a_user_gets_the_same_data_as_json(user: TestClient) -> None:
    answer = user.get(API_PATH, params={"route": ROUTE, "topic": "orders"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    data = answer.json()
    assert data["route"] == ROUTE and data["topic"] == "orders"
    assert [f["missing_offsets"] for f in data["findings"]] == ["40-41"]
    assert data["lag"]["records"] == 1234 and data["lag"]["breached"] is True
    assert [f["mode"] for f in data["failbacks"]] == ["resync"]
    assert [(w["worker"], w["partitions"], w["count"]) for w in data["workers"]] == [
        ("w1@host-a:4242", "orders[0-1,3]", 3), ("w2@host-b:77", "orders[2]", 1)]
    # Consumer-group lag beside each checkpoint: on the source (end 150 - 120), on the target if it moved now
    # (replica end 140 - 118); partition 1's replica end was not read: unknown, not 0.
    assert [(c["partition"], c["source_lag"], c["target_lag"]) for c in data["checkpoints"]] == [
        (0, 30, 22), (1, 0, None)]
    assert [rate for _, rate in data["rates"]] == [50, 10]  # (4000 - 1000) / 60 s, (4600 - 4000) / 60 s
    assert [latency for _, latency in data["latencies"]] == [300, 200, 100]
    assert data["last_sync"]["step"] == "metadata" and data["last_sync"]["status"] == "failed"
    assert [c["outcome"] for c in data["last_sync"]["changes"]] == ["applied", "failed"]


def test_a_user_sees_the_route_its_findings_and_its_lag(user: TestClient) -> None:
    answer = user.get(PAGE_PATH)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    for shown in (ROUTE, "primary.orders", "40-41", "1234", "billing", "breach", "All routes",
                  "STUCK 1, LOST_RECORDS 1", "breached: lag", "Lag over time, per topic",
                  "lag over time (records not yet copied)",
                  # which worker owns which partitions; the latest sync's diff
                  "w1@host-a:4242</td><td>orders[0-1,3]</td>", "w2@host-b:77</td><td>orders[2]</td>",
                  "retention.ms: 86400000 -&gt; 604800000", "CLUSTER_AUTHORIZATION_FAILED"):
        assert shown in answer.text, shown
    assert "<svg" in answer.text


def test_unreadable_state_is_503_without_its_url(tmp_path: Path) -> None:
    secret_url = "postgresql+psycopg://mirrorflow:s3cret@127.0.0.1:1/state"  # nothing listens on port 1
    for app in (create_app(lambda: secret_url), create_app(lambda: str(tmp_path / "missing.yaml"))):
        for client in _client(app, authorized=True):
            answer = client.get(PAGE_PATH)
            assert answer.status_code == 503, answer.text
            assert "s3cret" not in answer.text and str(tmp_path) not in answer.text


def test_an_unmigrated_state_db_shows_what_to_run(tmp_path: Path) -> None:
    for client in _client(create_app(lambda: f"sqlite:///{tmp_path / 'empty.db'}"), authorized=True):
        answer = client.get(PAGE_PATH)
        assert answer.status_code == 200 and "mirrorflow db upgrade" in answer.text
