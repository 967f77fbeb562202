#!/usr/bin/env python
"""One GET of the Replication page and one of its JSON, in process (FastAPI's TestClient, Airflow's login
check stood in for as tests/unit/ui/test_ui_app.py does); prints the timings as one JSON line.

    python bench/scale_page.py STATE_URL ROUTE

Run in a process of its own by bench/scale.py: importing Airflow is slow and wants ``$AIRFLOW_HOME``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> int:
    state_url, route = argv
    started = time.monotonic()
    from fastapi.testclient import TestClient

    from replicator.ui.app import API_PATH, AUTHORIZED, PAGE_PATH, create_app

    app = create_app(lambda: state_url)
    app.dependency_overrides[AUTHORIZED] = lambda: None
    result: dict[str, object] = {"import_s": round(time.monotonic() - started, 2)}
    with TestClient(app) as client:
        for key, path in (("page", PAGE_PATH), ("json", API_PATH)):
            begun = time.monotonic()
            answer = client.get(path, params={"route": route})
            result[key] = {"status": answer.status_code, "seconds": round(time.monotonic() - begun, 3),
                           "bytes": len(answer.content),
                           "error": None if answer.status_code == 200 else answer.text[:300]}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
