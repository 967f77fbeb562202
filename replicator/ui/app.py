"""The FastAPI app behind the Replication page, mounted by the plugin in Airflow's API server.

Airflow does not protect a plugin's app by itself: every route here depends on
Airflow's own check (:data:`AUTHORIZED`), which reads the JWT the UI holds (the
``_token`` cookie, or an ``Authorization: Bearer`` header) and asks the auth manager
whether the user may see the website. An anonymous request gets 401 and no data.

The state DB is found through ``$MIRRORFLOW_CONFIG`` (read per request, at this entry
point) and only read: no migration, no Kafka client, no secret on the page.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable
from functools import cache
from typing import Annotated

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
from airflow.api_fastapi.core_api.security import requires_access_view
from fastapi import Depends, FastAPI, Query
from fastapi.responses import HTMLResponse, JSONResponse
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from replicator.config import load_config
from replicator.errors import MirrorFlowError
from replicator.state.store import make_engine
from replicator.ui.page import ReplicationPage, build_overview, build_page, choose_route, listed_routes
from replicator.ui.page_json import page_json
from replicator.ui.queries import has_table, overview_rows, page_rows, run_query
from replicator.ui.render import render_error, render_page

log = logging.getLogger(__name__)

URL_PREFIX = "/mirrorflow"
PAGE_PATH = "/replication"
API_PATH = "/api/replication"  # the page's data as JSON, for scripts and dashboards
HISTORY_DAYS = 2  # of audit buckets in the chart; a day of one-minute buckets is 1440 points
AUTHORIZED = requires_access_view(AccessView.WEBSITE)

StateUrl = Callable[[], str]


def state_url_from_config() -> str:
    """The state DB URL of the config that ``$MIRRORFLOW_CONFIG`` names (or ./mirrorflow.yaml)."""
    return load_config(None, os.environ).state.url


@cache
def _engine(url: str) -> Engine:
    return make_engine(url)


def load_page(engine: Engine, route: str | None, topic: str | None, days: int,
              now: dt.datetime | None = None) -> ReplicationPage:
    """Read one route's page from the state DB (the first route when ``route`` is unknown)."""
    since = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=days)
    with engine.connect() as connection:
        if not has_table(connection, "mf_route"):
            return ReplicationPage(routes=(), route=None)
        routes = listed_routes(str(r["route"]) for r in run_query(connection, "routes"))
        chosen = choose_route(routes, route)
        if chosen is None:
            return ReplicationPage(routes=(), route=None)
        rows, failbacks = page_rows(connection, chosen, since)
        overview = build_overview(routes, overview_rows(connection))
    return build_page(routes, chosen, topic, rows, failbacks, overview)


def create_app(state_url: StateUrl = state_url_from_config) -> FastAPI:
    """The app: ``GET /replication`` (HTML) and ``GET /api/replication`` (the same data as JSON), for a user
    Airflow lets see its website."""
    app = FastAPI(title="MirrorFlow replication", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get(PAGE_PATH, response_class=HTMLResponse, dependencies=[Depends(AUTHORIZED)])
    def replication(route: str | None = None, topic: str | None = None,
                    days: Annotated[int, Query(ge=1, le=366)] = HISTORY_DAYS) -> HTMLResponse:
        try:
            page = load_page(_engine(state_url()), route, topic, days)
        except MirrorFlowError as exc:  # a bad or missing config: details go to the log only
            log.warning("replication page: cannot open the state database error=%s", exc)
            return HTMLResponse(render_error("the MirrorFlow config or state database cannot be opened "
                                             "(see the API server log)"), status_code=503)
        except SQLAlchemyError as exc:
            log.warning("replication page: state database error=%s", type(exc).__name__)
            return HTMLResponse(render_error("the state database cannot be read (see the API server log)"),
                                status_code=503)
        return HTMLResponse(render_page(page))

    @app.get(API_PATH, dependencies=[Depends(AUTHORIZED)])
    def replication_json(route: str | None = None, topic: str | None = None,
                         days: Annotated[int, Query(ge=1, le=366)] = HISTORY_DAYS) -> JSONResponse:
        try:
            page = load_page(_engine(state_url()), route, topic, days)
        except MirrorFlowError as exc:
            log.warning("replication API: cannot open the state database error=%s", exc)
            return JSONResponse({"error": "the MirrorFlow config or state database cannot be opened (see the API "
                                          "server log)"}, status_code=503)
        except SQLAlchemyError as exc:
            log.warning("replication API: state database error=%s", type(exc).__name__)
            return JSONResponse({"error": "the state database cannot be read (see the API server log)"},
                                status_code=503)
        return JSONResponse(page_json(page))

    return app
