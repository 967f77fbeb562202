"""The "Replication" page in a real Airflow, seen through a real headless browser (Debian's chromium).

One Airflow start for the module (about a minute on 2 cores), in a temporary home on a
free port. The state DB is seeded with an audit that found missing and duplicated
records, an SLA lag breach, checkpoints, a failover and a failback run, written by the same
repository functions the audit, SLA, checkpoint, failover and failback runs call
(``tests/ui_seed.py``): a real audit needs Spark and both clusters, and is tested on
its own in test_audit.py and test_replication_audit_dag.py. The browser then logs in
through Airflow's login form, follows the "Replication" entry of the navigation and
must see those rows; a screenshot is saved under the test's tmp_path.

The config's own route (``unreachable``) points at clusters that do not exist: the
DAGs are paused once Airflow is ready, and that route's SLA rows never touch the seeded
route's.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replicator.dev.airflow_local import AirflowSpec, LocalAirflow
from replicator.ui.app import API_PATH, PAGE_PATH, URL_PREFIX
from tests.support import free_port
from tests.ui_seed import REPLICA, ROUTE, seed

pytestmark = [pytest.mark.airflow]

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
WAIT_S = 60  # a busy 2-core machine: Airflow's SQLite writers can hold the API server for 15 s
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class RunningAirflow:
    """The module's Airflow, its admin login and the state DB it shows."""

    url: str
    password: str
    state_url: str

    @property
    def page_url(self) -> str:
        return f"{self.url}{URL_PREFIX}{PAGE_PATH}"


def _request(url: str, method: str = "GET", body: object = None,
             headers: dict[str, str] | None = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json", **(headers or {})},
                                     method=method)
    try:
        with _NO_PROXY.open(request, timeout=WAIT_S) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _token(airflow: RunningAirflow) -> str:
    status, body = _request(f"{airflow.url}/auth/token", "POST",
                            {"username": "admin", "password": airflow.password})
    assert status == 201, body
    return str(json.loads(body)["access_token"])


def _config(home: Path, state_url: str) -> str:
    return (
        "clusters:\n"
        f"  primary: {{bootstrap.servers: \"127.0.0.1:{free_port()}\"}}\n"
        f"  backup: {{bootstrap.servers: \"127.0.0.1:{free_port()}\"}}\n"
        "routes:\n"
        "  - {name: unreachable, source: primary, target: backup, topics: [\"orders\"]}\n"
        f"state: {{url: \"{state_url}\"}}\n"
    )


def _pause_every_dag(airflow: RunningAirflow) -> None:
    """Nothing here needs a DAG run: paused DAGs leave the 2 cores to the browser (best effort,
    Airflow's SQLite metadata DB may be locked by the scheduler for a moment)."""
    headers = {"Authorization": f"Bearer {_token(airflow)}"}
    for _ in range(3):
        status, _body = _request(f"{airflow.url}/api/v2/dags?dag_id_pattern=%25", "PATCH", {"is_paused": True},
                                 headers)
        if status == 200:
            return
        time.sleep(3)


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAirflow]:
    home = tmp_path_factory.mktemp("replication-page") / "home"
    home.mkdir()
    state_url = f"sqlite:///{home / 'state.db'}"
    seed(state_url, dt.datetime.now(dt.UTC))
    spec = AirflowSpec(home, free_port())
    spec.config_path.write_text(_config(home, state_url))
    local = LocalAirflow(spec)
    try:
        login = local.launch()
        local.wait_ready()
        assert login.new_password is not None
        running = RunningAirflow(spec.url, login.new_password, state_url)
        _pause_every_dag(running)
        yield running
    finally:
        local.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium driven by Debian's chromedriver (`make test` installs both)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed: `make browser` installs them")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,2000", "--no-proxy-server"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def test_a_logged_in_user_sees_the_audit_rows_on_the_replication_page(
    airflow: RunningAirflow, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_S)
    browser.get(f"{airflow.url}/")
    wait.until(seen.presence_of_element_located((By.NAME, "username"))).send_keys("admin")
    browser.find_element(By.NAME, "password").send_keys(airflow.password)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    entry = wait.until(seen.element_to_be_clickable((By.CSS_SELECTOR, "a[href$='plugin/replication']")))
    entry.click()
    wait.until(seen.frame_to_be_available_and_switch_to_it((By.TAG_NAME, "iframe")))
    findings = wait.until(seen.visibility_of_element_located((By.ID, "findings")))
    rows = [row.text for row in findings.find_elements(By.TAG_NAME, "tr")]
    body = browser.find_element(By.TAG_NAME, "body").text
    browser.switch_to.default_content()
    screenshot = tmp_path / "replication-page.png"
    assert browser.save_screenshot(str(screenshot))
    print(f"screenshot: {screenshot}")
    [finding] = rows[1:]
    for shown in ("orders", REPLICA, "missing", "40-41", "44", "audit-ui-1"):
        assert shown in finding, (shown, finding)
    for shown in (ROUTE, "1234 records not yet copied", "breach", "billing", "Failovers", "checkpoint",
                  "Failbacks", "resync", "4321"):
        assert shown in body, shown
    assert screenshot.stat().st_size > 10_000


def test_an_anonymous_request_gets_no_data(airflow: RunningAirflow) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Cookie": "_token=forged"}):
        status, body = _request(f"{airflow.page_url}?route={ROUTE}", headers=headers)
        assert status in (401, 403), (headers, status)
        assert ROUTE not in body and "40-41" not in body and REPLICA not in body


def test_the_page_and_its_json_answer_an_api_token_too(airflow: RunningAirflow) -> None:
    bearer = {"Authorization": f"Bearer {_token(airflow)}"}
    status, body = _request(airflow.page_url, headers=bearer)
    assert status == 200 and ROUTE in body and "40-41" in body
    status, body = _request(f"{airflow.url}{URL_PREFIX}{API_PATH}?route={ROUTE}", headers=bearer)
    assert status == 200 and json.loads(body)["findings"][0]["missing_offsets"] == "40-41"
    status, body = _request(f"{airflow.url}{URL_PREFIX}{API_PATH}?route={ROUTE}")
    assert status == 401 and "40-41" not in body


def test_the_plugin_is_listed_without_import_error(airflow: RunningAirflow) -> None:
    headers = {"Authorization": f"Bearer {_token(airflow)}"}
    status, body = _request(f"{airflow.url}/api/v2/plugins", headers=headers)
    assert status == 200, body
    plugins = {p["name"]: p for p in json.loads(body)["plugins"]}
    views = plugins["mirrorflow_replication"]["external_views"]
    assert [(v["name"], v["href"], v["url_route"]) for v in views] == [
        ("Replication", URL_PREFIX + PAGE_PATH, "replication")]
    status, body = _request(f"{airflow.url}/api/v2/importErrors", headers=headers)
    assert status == 200 and "mirrorflow_replication" not in body
