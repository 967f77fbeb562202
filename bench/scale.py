#!/usr/bin/env python
"""Scale: MirrorFlow and MirrorMaker 2 on many partitions, and MirrorFlow's control plane at that size.

Run from the repository root::

    .venv/bin/python bench/scale.py --topics 500 --partitions 4 [--groups 1000] [--report scale.json]
    .venv/bin/python bench/scale.py --quick          # 100 topics x 4, 100 groups, 10 s idle windows

On two fresh single-node KRaft clusters: the source topics are created in batches, every
partition gets one record, then a producer thread writes a small steady load (200
records/s over all partitions) until the end. Then, one peer after the other (in ``--peers``'
order: the first meets colder brokers), each copying every topic of the shape (one regex):

1. start-up: launch -> every source partition has a record on the target;
2. idle cost under the steady load: CPU % of one core and RSS of the peer process;
3. MirrorFlow only: its topic-refresh and loop-turn histograms (``--metrics-port``); then
   G consumer groups committed on a few topics and ``mirrorflow checkpoint`` timed, and
   ``mirrorflow status``, ``mirrorflow sync --dry-run`` and the Replication page timed;
4. restart (``--restart``, on by default): the peer stopped with the load paused, one marker
   written to every source partition, the peer launched again: launch -> every marker on the
   target (the start-up of a deploy, with the replicas already there);
5. MirrorMaker 2 started again with its checkpoint connector on the same groups: launch -> a
   checkpoint of every group's every committed partition on the target.

Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import Env  # noqa: E402
from peers import MF_SOURCE_ALIAS, start_mirrorflow, start_mm2  # noqa: E402
from procs import Child, StepFailed, bench_parser, progress, run_bench, start_clusters, tear_down  # noqa: E402
from scale_control import (  # noqa: E402
    GROUP_PREFIX,
    MM2_CHECKPOINTS,
    commit_groups,
    end_offsets,
    page_probe,
    timed_cli,
    timed_cli_runs,
    watch_checkpoints,
)
from scale_load import Shape, SteadyLoad, create_shape, measure_idle, watch_startup  # noqa: E402
from scale_metrics import LOOP_TURN, LOOP_TURN_REFRESHING, REFRESH, REFRESH_STALL_S, scrape, since, summary, tail  # noqa: E402
from scale_profile import Sampler, loop_hotspots  # noqa: E402
from scale_restart import restart  # noqa: E402

from tests.support import free_port  # noqa: E402

GROUP_TOPICS = 4  # the groups commit on this many of the route's topics
QUIET_SETTLE_S = 3.0  # after pausing the load, before the no-load window
STATUS_RUNS = 3  # `status` one after the other: one run alone swung 1.4-2.8 s on this machine


def target_logs(env: Env) -> Path:
    """The target broker's log folder (``procs.start_clusters`` puts the clusters under the work dir)."""
    return env.work / "clusters" / "target" / "logs"


def run_mirrorflow(env: Env, shape: Shape, args: argparse.Namespace, load: SteadyLoad) -> dict[str, Any]:
    """MirrorFlow's start-up, idle cost and histograms; then its control plane while it still runs."""
    tag, port = shape.prefix, free_port()
    route = {"checkpoints": {"groups": [f"{GROUP_PREFIX}.*"]}}
    progress(f"MirrorFlow: starting route bench-{tag} on {shape.pattern} (metrics on port {port})")
    peer = start_mirrorflow(env, tag, [shape.pattern], metrics_port=port, route=route)
    sampler = Sampler(peer.pid, env.work / "mirrorflow.pyspy.txt") if args.py_spy else None
    result: dict[str, Any] = {}
    try:
        result["startup"] = watch_startup(env.target, peer, "MirrorFlow", shape.partitions_of(f"{MF_SOURCE_ALIAS}."),
                                          args.startup_timeout, target_logs(env))
        result["idle"] = measure_idle(peer, "MirrorFlow", args.idle_seconds, scrape=lambda: _scrape(port))
        if sampler is not None:
            result["loop_profile"] = _loop_profile(sampler)
        result["metrics"] = _metric_figures(result["idle"])
        result["quiet"] = quiet_window(peer, "MirrorFlow", load, args.quiet_seconds)
        result["control"] = control_plane(env, shape, args, tag)
        if args.restart:
            result["restart"], peer = _restart(env, shape, args, load, peer, "MirrorFlow", f"{MF_SOURCE_ALIAS}.",
                                               lambda: start_mirrorflow(env, tag, [shape.pattern], route=route,
                                                                        log=f"mirrorflow-{tag}-restart.log"))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        if sampler is not None:
            sampler.stop()  # already stopped unless a step failed before the end of the loaded window
        result["exit_code"] = peer.stop(60)
        progress(f"MirrorFlow: stopped (exit code {result['exit_code']}); log {peer.log}")
    return result


def _restart(env: Env, shape: Shape, args: argparse.Namespace, load: SteadyLoad, peer: Child, label: str,
             prefix: str, relaunch: Callable[[], Child]) -> tuple[dict[str, Any], Child]:
    """``scale_restart.restart`` with the load paused: only the markers are new on the source meanwhile."""
    load.pause(True)
    try:
        return restart(env.source, env.target, shape.partitions_of(), shape.partitions_of(prefix), peer, relaunch,
                       label, args.startup_timeout)
    finally:
        load.pause(False)


def _keep_mm2_logs(env: Env, shape: Shape, run: str) -> None:
    """Rename MM2's logs before it starts again (its driver writes the same file names each time)."""
    for name in (f"mm2-{shape.prefix}.out", f"mm2-{shape.prefix}-connect.log"):
        if (env.work / name).exists():
            (env.work / name).rename(env.work / name.replace(shape.prefix, f"{shape.prefix}-{run}"))


def quiet_window(peer: Child, label: str, load: SteadyLoad, seconds: float) -> dict[str, Any] | None:
    """The same figures with the load paused (after a few seconds for what was in flight): the cost of
    merely holding the partitions."""
    if not seconds:
        return None
    load.pause(True)
    try:
        time.sleep(QUIET_SETTLE_S)
        progress(f"  {label}: load paused")
        return measure_idle(peer, f"{label} (no load)", seconds)
    finally:
        load.pause(False)


def _loop_profile(sampler: Sampler) -> dict[str, Any]:
    """Stop py-spy; the copy loop's busiest call paths from launch to the end of the loaded window."""
    raw = sampler.stop()
    if raw is None:
        progress("  --py-spy: no samples (is py-spy installed and allowed to trace?)")
        return {"error": "no samples"}
    total, paths = loop_hotspots(raw)
    progress(f"  MirrorFlow loop thread, {total:,} samples since launch (py-spy, {sampler.out}); busiest paths:")
    for count, path in paths:
        progress(f"    {100 * count / max(total, 1):5.1f} %  {path}")
    return {"samples": total, "paths": [{"samples": c, "path": p} for c, p in paths], "raw": str(sampler.out)}


def _scrape(port: int) -> dict[str, Any] | None:
    try:
        return scrape(port)
    except OSError as exc:
        progress(f"  cannot scrape the metrics on port {port}: {exc}")
        return None


def _metric_figures(idle: dict[str, Any]) -> dict[str, Any]:
    after, before = idle.pop("metrics_after"), idle.pop("metrics_before")
    if after is None:
        return {"error": "no metrics scraped"}
    figures = {"refresh": summary(after[REFRESH]), "loop_turns": summary(after[LOOP_TURN]),
               "loop_turns_idle": summary(since(after[LOOP_TURN], before and before[LOOP_TURN])),
               "loop_turns_refreshing": summary(after[LOOP_TURN_REFRESHING], REFRESH_STALL_S)
               | {"over_each": tail(after[LOOP_TURN_REFRESHING])}}
    steady = since(after[LOOP_TURN_REFRESHING], before and before[LOOP_TURN_REFRESHING])
    figures["loop_turns_refreshing_idle"] = summary(steady, REFRESH_STALL_S) | {"over_each": tail(steady)}
    r, t, w = figures["refresh"], figures["loop_turns"], figures["loop_turns_idle"]
    f = figures["loop_turns_refreshing"]
    g = figures["loop_turns_refreshing_idle"]
    progress(f"  MirrorFlow loop turns while a topic refresh ran: {f['count']:,}, {f['over']} over "
             f"{REFRESH_STALL_S:g} s, longest {f['worst']} s; over each bound (s): {f['over_each']} "
             f"(idle window: {g['count']:,}, {g['over']} over {REFRESH_STALL_S:g} s, longest {g['worst']} s)")
    progress(f"  MirrorFlow metrics since launch: {r['count']} topic refreshes, mean {_s(r['mean_s'])} s, worst "
             f"{r['worst']} s; {t['count']:,} loop turns, {t['over']} over 0.1 s, longest {t['worst']} s "
             f"(idle window: {w['count']:,} turns, {w['over']} over 0.1 s, longest {w['worst']} s)")
    return figures


def control_plane(env: Env, shape: Shape, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    """Groups then ``checkpoint``; ``status``; ``sync --dry-run``; the page (each failure noted, the rest run)."""
    config, route = str(env.work / f"mirrorflow-{tag}.yaml"), f"bench-{tag}"
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    if args.groups:
        steps.append(("groups", lambda: _groups_and_checkpoint(env, shape, args.groups, config, route)))
    status = ["status", "--config", config, "--route", route]
    steps += [("status", lambda: timed_cli_runs(env.work, "status", status, STATUS_RUNS)),
              ("sync_dry_run", lambda: timed_cli(env.work, "sync", ["sync", "--config", config, "--route", route,
                                                                    "--dry-run"])),
              ("page", lambda: page_probe(env.work, f"sqlite:///{env.work / f'state-{tag}.db'}", route))]
    out: dict[str, Any] = {}
    for name, step in steps:
        progress(f"MirrorFlow control plane: {name}")
        try:
            out[name] = step()
        except StepFailed as failure:
            progress(f"  FAILED: {failure}")
            out[name] = {"error": str(failure)}
    return out


def _groups_and_checkpoint(env: Env, shape: Shape, groups: int, config: str, route: str) -> dict[str, Any]:
    positions = end_offsets(env.source, shape.names[:GROUP_TOPICS], shape.partitions)
    result = commit_groups(env.source, groups, positions)
    # The dry run reads and translates only: the difference is the writing (checkpoints topic, state DB).
    result["checkpoint_dry_run"] = timed_cli(env.work, "checkpoint-dry-run", ["checkpoint", "--config", config,
                                                                            "--route", route, "--dry-run"])
    result["checkpoint"] = timed_cli(env.work, "checkpoint", ["checkpoint", "--config", config, "--route", route])
    return result


def run_mm2(env: Env, shape: Shape, args: argparse.Namespace, load: SteadyLoad) -> dict[str, Any]:
    """MirrorMaker 2's start-up and idle cost on the same topics (one regex)."""
    progress(f"MirrorMaker 2: starting, copying {shape.pattern}")
    peer = start_mm2(env, shape.prefix, [shape.pattern], regex=True)
    result: dict[str, Any] = {}
    try:
        result["startup"] = watch_startup(env.target, peer, "MirrorMaker 2", shape.partitions_of("source."),
                                          args.startup_timeout, target_logs(env))
        result["idle"] = measure_idle(peer, "MirrorMaker 2", args.idle_seconds)
        result["quiet"] = quiet_window(peer, "MirrorMaker 2", load, args.quiet_seconds)
        if args.restart:
            _keep_mm2_logs(env, shape, "first")
            result["restart"], peer = _restart(env, shape, args, load, peer, "MirrorMaker 2", "source.",
                                               lambda: start_mm2(env, shape.prefix, [shape.pattern], regex=True))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        result["exit_code"] = peer.stop(60)
        progress(f"MirrorMaker 2: stopped (exit code {result['exit_code']}); log {peer.log}")
    return result


def mm2_checkpoints(env: Env, shape: Shape, args: argparse.Namespace, groups: dict[str, Any]) -> dict[str, Any]:
    """MirrorMaker 2 started again (its Connect state kept: nothing left to copy) with its checkpoint connector
    on the groups MirrorFlow checkpointed (committed here when MirrorFlow did not run): launch -> a checkpoint
    of every group's every committed partition on the target."""
    if "partitions_per_group" not in groups:
        groups = commit_groups(env.source, args.groups, end_offsets(env.source, shape.names[:GROUP_TOPICS],
                                                                    shape.partitions))
    expected = groups["groups"] * groups["partitions_per_group"]
    _keep_mm2_logs(env, shape, "restart" if args.restart else "copy")  # the copy run's
    progress(f"MirrorMaker 2: starting again with checkpoints of {groups['groups']:,} groups")
    launched_ms = int(time.time() * 1000)
    peer = start_mm2(env, shape.prefix, [shape.pattern], regex=True, extra=MM2_CHECKPOINTS)
    try:
        return watch_checkpoints(env.target, "source.checkpoints.internal", expected, launched_ms,
                                 args.startup_timeout, lambda: peer.check_alive("MirrorMaker 2 checkpoints"))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        return {"error": str(failure), "expected": expected}
    finally:
        peer.stop(60)


# -- report ------------------------------------------------------------------------------

def _s(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [f"\n=== {s['topics']:,} topics x {s['partitions']} partitions = {s['topics'] * s['partitions']:,} "
             f"partitions; steady load {s['rate']} rec/s; idle window {s['idle_seconds']:.0f} s; "
             f"{report['machine']['cpus']} CPUs ===",
             f"{'peer':15}{'start-up s':>11}{'CPU %':>8}{'no-load CPU %':>15}{'RSS MiB':>9}"
             f"{'refresh mean s':>16}{'refresh worst s':>17}"
             f"{'loop turns > 0.1 s':>28}"]
    for key, label in (("mirrorflow", "MirrorFlow"), ("mm2", "MirrorMaker 2")):
        row = report.get(key) or {}
        startup, idle, metrics = row.get("startup") or {}, row.get("idle") or {}, row.get("metrics") or {}
        quiet = row.get("quiet") or {}
        refresh, turns = metrics.get("refresh") or {}, metrics.get("loop_turns") or {}
        stalls = (f"{turns['over']}/{turns['count']:,}, longest {turns['worst']}" if turns else "-")
        lines.append(f"{label:15}{_s(startup.get('startup_s'), '.1f'):>11}{_s(idle.get('cpu_pct'), '.1f'):>8}"
                     f"{_s(quiet.get('cpu_pct'), '.1f'):>15}"
                     f"{_s(idle.get('rss_mib'), '.0f'):>9}{_s(refresh.get('mean_s')):>16}"
                     f"{refresh.get('worst', '-'):>17}{stalls:>28}")
        if "error" in row:
            lines.append(f"{'':15}FAILED: {row['error'][:150]}")
    for key, label in (("mirrorflow", "MirrorFlow"), ("mm2", "MirrorMaker 2")):
        startup = (report.get(key) or {}).get("startup") or {}
        if startup.get("replica_logs"):
            lines.append(f"{label} start-up: the target broker created the {startup['replica_logs']:,} replica logs "
                         f"{startup['first_log_s']:.1f}-{startup['last_log_s']:.1f} s after launch; every partition "
                         f"copied {startup['after_last_log_s']:.1f} s after the last")
    for key, label in (("mirrorflow", "MirrorFlow"), ("mm2", "MirrorMaker 2")):
        again = (report.get(key) or {}).get("restart") or {}
        if again.get("restart_s") is not None:
            lines.append(f"{label} restart over the existing replicas: every partition copying "
                         f"{again['restart_s']:.1f} s after launch (first {again['first_s']:.1f} s, half "
                         f"{again['half_s']:.1f} s)")
    refreshing = ((report.get("mirrorflow") or {}).get("metrics") or {}).get("loop_turns_refreshing")
    if refreshing:
        lines.append(f"MirrorFlow loop turns while a topic refresh ran: {refreshing['count']:,}, "
                     f"{refreshing['over']} over {refreshing['over_s']:g} s, longest {refreshing['worst']} s "
                     f"(over each bound, s: {refreshing.get('over_each', {})})")
    steady = ((report.get("mirrorflow") or {}).get("metrics") or {}).get("loop_turns_refreshing_idle")
    if steady:
        lines.append(f"  of them in the idle window: {steady['count']:,}, {steady['over']} over "
                     f"{steady['over_s']:g} s, longest {steady['worst']} s")
    for key, label in (("mirrorflow", "MirrorFlow"), ("mm2", "MirrorMaker 2")):
        for window, name in (("idle", "under the load"), ("quiet", "no load")):
            threads = ((report.get(key) or {}).get(window) or {}).get("threads_cpu_pct") or {}
            if threads:
                lines.append(f"{label} busiest threads {name} (% of a core): "
                             + ", ".join(f"{n} {pct:.1f}" for n, pct in list(threads.items())[:5]))
    control = (report.get("mirrorflow") or {}).get("control") or {}
    lines += _control_lines(control)
    mm2_ck = (report.get("mm2") or {}).get("checkpoints") or {}
    if mm2_ck:
        done = (f"every one {mm2_ck['complete_s']:.1f} s after launch" if mm2_ck.get("complete_s") is not None
                else f"{mm2_ck.get('seen', 0):,} of them by the timeout" + (f" ({mm2_ck['error'][:100]})"
                                                                              if "error" in mm2_ck else ""))
        lines.append(f"MirrorMaker 2 checkpoints of the same {mm2_ck['expected']:,} group partitions (started "
                     f"again, nothing to copy): {done}")
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min; topics created in {s.get('create_s', 0):.1f} s)")
    return "\n".join(lines)


def _control_lines(control: dict[str, Any]) -> list[str]:
    lines = []
    groups = control.get("groups") or {}
    if "checkpoint" in groups:
        c = groups["checkpoint"]
        lines.append(f"checkpoint: {groups['groups']:,} groups x {groups['partitions_per_group']} partitions "
                     f"(committed in {groups['commit_s']:.1f} s): `mirrorflow checkpoint` {c['wall_s']:.1f} s, "
                     f"exit {c['exit_code']}; {c['first_line'][:100]}")
        if "checkpoint_dry_run" in groups:
            d = groups["checkpoint_dry_run"]
            lines.append(f"checkpoint --dry-run (read and translate only): {d['wall_s']:.1f} s, exit {d['exit_code']}")
    for key, name in (("status", "status"), ("sync_dry_run", "sync --dry-run")):
        if key in control and "wall_s" in control[key]:
            c = control[key]
            runs = f" (median of {', '.join(f'{r:.1f}' for r in c['runs_s'])})" if len(c.get("runs_s", [])) > 1 else ""
            lines.append(f"{name}: {c['wall_s']:.1f} s{runs}, exit {c['exit_code']}, {c['stdout_lines']:,} lines")
    page = control.get("page") or {}
    if "page" in page:
        lines.append(f"Replication page: HTML {page['page']['status']} in {page['page']['seconds']:.2f} s "
                     f"({page['page']['bytes']:,} B), JSON {page['json']['status']} in {page['json']['seconds']:.2f} s "
                     f"({page['json']['bytes']:,} B)")
    lines += [f"{key}: FAILED: {value['error'][:150]}" for key, value in control.items() if "error" in value]
    return lines


# -- the run -----------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="100 topics x 4, 100 groups, 10 s idle windows")
    parser.add_argument("--topics", type=int, help="source topics (default 500; --quick 100)")
    parser.add_argument("--partitions", type=int, help="partitions per topic (default 4)")
    parser.add_argument("--groups", type=int, help="consumer groups to checkpoint (default 1000; --quick 100; 0: skip)")
    parser.add_argument("--rate", type=int, default=200, help="steady load, records/s over all partitions")
    parser.add_argument("--idle-seconds", type=float, help="length of the idle window (default 30; --quick 10)")
    parser.add_argument("--quiet-seconds", type=float,
                        help="then a window with the load paused (default 15; --quick 5; 0: none)")
    parser.add_argument("--startup-timeout", type=float, default=600, help="seconds a peer may take to start up")
    parser.add_argument("--peers", default="mirrorflow,mm2",
                        help="which peers to run, comma-separated, in this order (the first meets colder brokers)")
    parser.add_argument("--restart", action=argparse.BooleanOptionalAction, default=True,
                        help="at the end of each peer's run, stop it, mark every source partition and start it "
                             "again: launch -> every marker on the target, with the replicas there (default: on)")
    parser.add_argument("--py-spy", action="store_true",
                        help="sample MirrorFlow with py-spy from launch to the end of the loaded window and print "
                             "where its copy loop spent the time (adds load to the machine)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.peers.split(",")) - {"mirrorflow", "mm2"})
    if unknown:
        parser.error(f"--peers: unknown peer(s) {', '.join(unknown)} (mirrorflow, mm2)")
    args.topics = args.topics or (100 if args.quick else 500)
    args.partitions = args.partitions or 4
    args.groups = (100 if args.quick else 1000) if args.groups is None else args.groups
    args.idle_seconds = args.idle_seconds or (10.0 if args.quick else 30.0)
    args.quiet_seconds = (5.0 if args.quick else 15.0) if args.quiet_seconds is None else args.quiet_seconds
    return args


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().split()
    return {"cpus": os.cpu_count(), "mem_total_gib": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
            "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3]}


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Clusters, topics, load, then each peer; the caller stops what is left running."""
    shape = Shape(f"scale{args.topics}x{args.partitions}", args.topics, args.partitions)
    env = Env(work, *start_clusters(work, report), records=0, latency_seconds=0)
    progress(f"creating {shape.topics:,} topics x {shape.partitions} partitions ({shape.pattern})")
    report["settings"]["create_s"] = round(create_shape(env.source, shape), 1)
    load = report["_load"] = SteadyLoad(env.source, shape, args.rate)
    load.seed()
    load.start()
    progress(f"steady load: {args.rate} rec/s over {shape.topics * shape.partitions:,} partitions")
    peers = args.peers.split(",")
    for peer in peers:  # in the order given: the first meets the least warmed-up brokers
        report[peer] = (run_mirrorflow if peer == "mirrorflow" else run_mm2)(env, shape, args, load)
    if "mm2" in peers and args.groups:
        groups = ((report.get("mirrorflow") or {}).get("control") or {}).get("groups") or {}
        report["mm2"]["checkpoints"] = mm2_checkpoints(env, shape, args, groups)
    load.stop()
    report["load"] = {"sent": load.sent, "failed": load.failed}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="mirrorflow-scale-"))
    report: dict[str, Any] = {"settings": {k: v for k, v in vars(args).items() if k != "report"} | {"work": str(work)},
                              "machine": machine()}
    report["settings"]["keep"] = args.keep
    progress(f"work dir {work}; {args.topics:,} topics x {args.partitions}, {args.groups:,} groups")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: any("error" in (report.get(k) or {}) for k in ("mirrorflow", "mm2")),
                     lambda: table(report) if "settings" in report else None, args.keep, args.report)



if __name__ == "__main__":
    sys.exit(main())
