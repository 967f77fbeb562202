"""What the scale bench reads from a worker's /metrics (pure: text in, figures out)."""

from __future__ import annotations

import math
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

REFRESH = "mirrorflow_topic_refresh_seconds"
LOOP_TURN = "mirrorflow_loop_turn_seconds"
LOOP_TURN_REFRESHING = "mirrorflow_loop_turn_while_refreshing_seconds"
STALL_S = 0.1  # a turn waits ~50 ms at most when idle: a longer one held the loop
# The goal: a refresh never holds the loop up for more than 50 ms. A turn with nothing to do waits
# ~50 ms by design, so a turn held 50 ms more lasts 0.1 s: the same bound as STALL_S.
REFRESH_STALL_S = 0.1


def scrape(port: int, names: tuple[str, ...] = (REFRESH, LOOP_TURN, LOOP_TURN_REFRESHING)) -> dict[str, dict[str, Any]]:
    """The named histograms of the worker on ``port`` (summed over routes), as :func:`histograms` returns them."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return histograms(answer.read().decode(), names)


def histograms(text: str, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Per histogram name: ``count``, ``sum`` and ``buckets`` (upper bound -> cumulative count)."""
    found: dict[str, dict[str, Any]] = {n: {"count": 0.0, "sum": 0.0, "buckets": {}} for n in names}
    for family in text_string_to_metric_families(text):
        if family.name not in found:
            continue
        into = found[family.name]
        for sample in family.samples:
            if sample.name.endswith("_count"):
                into["count"] += sample.value
            elif sample.name.endswith("_sum"):
                into["sum"] += sample.value
            elif sample.name.endswith("_bucket"):
                bound = float(sample.labels["le"])
                into["buckets"][bound] = into["buckets"].get(bound, 0.0) + sample.value
    return found


def since(after: dict[str, Any], before: dict[str, Any] | None) -> dict[str, Any]:
    """The observations of one histogram between two scrapes (all of ``after`` without ``before``)."""
    if before is None:
        return after
    return {"count": after["count"] - before["count"], "sum": after["sum"] - before["sum"],
            "buckets": {b: n - before["buckets"].get(b, 0.0) for b, n in after["buckets"].items()}}


def worst_bound(hist: dict[str, Any]) -> float | None:
    """The smallest bucket bound holding every observation: an upper bound of the worst (inf past the last
    finite bound; None without observations)."""
    if not hist["count"]:
        return None
    return float(min(b for b, n in hist["buckets"].items() if n >= hist["count"]))


def summary(hist: dict[str, Any], threshold: float = STALL_S) -> dict[str, Any]:
    """count, mean seconds, the worst's bound, and the count and share of observations over ``threshold``
    (a bucket bound)."""
    count = hist["count"]
    within = hist["buckets"].get(threshold, count)
    worst = worst_bound(hist)
    return {"count": int(count), "mean_s": hist["sum"] / count if count else None,
            "worst_le_s": None if worst is None or math.isinf(worst) else worst,
            "worst": bound_text(worst, hist["buckets"]),
            "over": int(count - within), "over_s": threshold, "share_over": (count - within) / count if count else None}


def tail(hist: dict[str, Any], above: float = 0.05) -> dict[str, int]:
    """How many observations exceeded each finite bucket bound above ``above`` (``{"0.1": n, ...}``)."""
    count = hist["count"]
    return {f"{bound:g}": int(count - n) for bound, n in sorted(hist["buckets"].items())
            if above < bound and not math.isinf(bound)}


def bound_text(bound: float | None, buckets: dict[float, float]) -> str:
    """A worst bound as the table shows it: ``<=0.25``, ``>60`` (past the last finite bound), ``-``."""
    if bound is None:
        return "-"
    if math.isinf(bound):
        return f">{max((b for b in buckets if not math.isinf(b)), default=0):g}"
    return f"<={bound:g}"
