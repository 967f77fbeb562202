"""Airflow plugin: the "Replication" page of MirrorFlow in the Airflow UI.

The page is a FastAPI app (``replicator.ui.app``) mounted by the API server at
``/mirrorflow``; an external view puts "Replication" in the UI's navigation and shows
the page in Airflow's frame. The app checks Airflow's login itself (Airflow does not
protect plugin apps): anonymous requests get 401 and no data.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from replicator.ui.app import PAGE_PATH, URL_PREFIX, create_app


class MirrorFlowReplicationPlugin(AirflowPlugin):
    """Per route and topic: audits, SLA breaches, failovers, checkpoints and the current lag."""

    name = "mirrorflow_replication"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "MirrorFlow replication"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "Replication",
            "href": URL_PREFIX + PAGE_PATH,
            "url_route": "replication",
            "destination": "nav",
            "nav_top_level": True,
        }
    ]
