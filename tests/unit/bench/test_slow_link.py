"""The slow-link bench's pure parts: link shapes and their toxics, the report table, bad options."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from slow_link import Link, links, parse_args, share, table


def test_a_round_trip_is_half_each_way_and_a_cap_is_in_kilobytes_per_second() -> None:
    assert Link(0).toxics() == []
    assert Link(100).toxics() == [("latency", {"latency": 50, "jitter": 0})]
    assert Link(50, 2.5).toxics() == [("latency", {"latency": 25, "jitter": 0}), ("bandwidth", {"rate": 2560})]
    assert [link.tag for link in links([0, 50], [10.0, 2.5], 50)] == ["r0", "r50", "r50c10", "r50c2_5"]
    assert Link(50, 10.0).name == "50 ms, 10 MB/s"


def test_share_needs_both_figures() -> None:
    assert share(40.0, 50.0) == 80.0
    assert share(None, 50.0) is None and share(40.0, None) is None and share(40.0, 0.0) is None


def _copy(rate: float, partial: bool = False) -> dict[str, object]:
    return {"label": "x", "records_per_s": rate, "partial": partial}


def test_the_table_compares_each_link_with_its_capacity_the_local_rate_and_mm2() -> None:
    mb = 1024 * 1024 / 1024  # records/s of 1 KiB per MB/s
    report = {"settings": {"records": 1000, "size": 1024, "budget": 90.0}, "machine": {"cpus": 2}, "wall_s": 60.0,
              "backlog": {"records_per_s": 5000.0},
              "runs": [{"rtt_ms": 0, "cap_mb_s": None, "link": {"mb_per_s": 20.0}, "mirrorflow": _copy(10 * mb),
                        "mm2": _copy(5 * mb), "mm2_tuned": _copy(8 * mb)},
                       {"rtt_ms": 100, "cap_mb_s": None, "link": {"mb_per_s": 10.0}, "mirrorflow": _copy(8 * mb),
                        "mm2": {"label": "MirrorMaker 2 (100 ms)", "error": "stalled"},
                        "mm2_tuned": _copy(2 * mb, partial=True)}]}
    rows = table(report).splitlines()
    local = next(r for r in rows if r.startswith("0 ms"))
    assert local.split()[2:] == ["20.0", "10.0", "(100", "%)", "50", "5.0", "(100", "%)", "8.0", "(100", "%)",
                                 "2.0", "1.2"]
    slow = next(r for r in rows if r.startswith("100 ms"))
    assert slow.split()[2:7] == ["10.0", "8.0", "(80", "%)", "80"]  # 80 % of its local rate, of the link
    assert slow.split()[7:11] == ["-", "(-", "%)", "2.0"] and "(25 %)*" in slow  # partial: marked
    assert "MirrorMaker 2 (100 ms) FAILED: stalled" in table(report)


@pytest.mark.parametrize("argv", [["--rtts", "-5"], ["--caps", "0"], ["--rtts", "fast"]])
def test_bad_link_options_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert "--rtts" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--partitions", "0"], ["--workers", "0"], ["--brokers", "0"]])
def test_no_partition_or_no_worker_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert "--partitions, --workers and --brokers must be >= 1" in capsys.readouterr().err


def test_the_table_names_the_partitions_and_the_workers() -> None:
    report = {"settings": {"records": 1000, "size": 1024, "budget": 90.0, "partitions": 16, "workers": 4,
                           "brokers": 3},
              "machine": {"cpus": 2}, "wall_s": 60.0, "runs": []}
    assert "on 16 partitions, 4 MirrorFlow workers / MM2 tasks, the target's 3 nodes behind" in table(report)


def test_mirrorflows_producer_settings_are_given_as_key_value(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(["--mirrorflow-producer", "max.in.flight.requests.per.connection=3",
                       "--mirrorflow-producer", "linger.ms=5"])
    assert args.mirrorflow_producer == {"max.in.flight.requests.per.connection": "3", "linger.ms": "5"}
    with pytest.raises(SystemExit):
        parse_args(["--mirrorflow-producer", "linger.ms"])
    assert "--mirrorflow-producer takes KEY=VALUE" in capsys.readouterr().err
    assert parse_args(["--mirrorflow-consumer", "max.partition.fetch.bytes=8388608"]).mirrorflow_consumer == \
        {"max.partition.fetch.bytes": "8388608"}
    with pytest.raises(SystemExit):
        parse_args(["--mirrorflow-consumer", "=1"])
    assert "--mirrorflow-consumer takes KEY=VALUE" in capsys.readouterr().err


def test_a_far_source_is_named_and_read_through_the_proxy() -> None:
    report = {"settings": {"records": 1000, "size": 1024, "budget": 90.0, "far": "source"},
              "machine": {"cpus": 2}, "wall_s": 60.0, "runs": []}
    text = table(report)
    assert "the source's 1 node behind Toxiproxy" in text
    assert "link MB/s: ConsumerPerformance reading the backlog through the proxy" in text
    assert parse_args(["--far", "source"]).far == "source" and parse_args([]).far == "target"


def test_mirrorflow_runs_the_workers_asked_with_the_settings_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import slow_link

    calls: list[tuple[str, object, object]] = []
    monkeypatch.setattr(slow_link, "start_mirrorflow",
                        lambda env, size, topics, alias, route: calls.append(("one", size, route)))
    monkeypatch.setattr(slow_link, "start_mirrorflow_workers",
                        lambda env, size, topics, workers, alias, route: calls.append((f"x{workers}", size, route)))
    slow_link.launch_mirrorflow(None, parse_args([]), Link(100), "mf")  # type: ignore[arg-type]
    slow_link.launch_mirrorflow(None, parse_args(["--workers", "3", "--mirrorflow-consumer", "a=1",  # type: ignore[arg-type]
                                                  "--mirrorflow-producer", "b=2"]), Link(50, 10.0), "mf")
    assert calls == [("one", "link-r100", None),
                     ("x3", "link-r50c10", {"producer": {"b": "2"}, "consumer": {"a": "1"}})]


def test_a_routes_workers_share_one_config_each_with_an_id_and_a_log_of_its_own(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import peers
    from measure import Env

    started: list[tuple[str, list[str], Path]] = []

    class Started:
        def __init__(self, name: str, args: list[str], log: Path, **_: object) -> None:
            started.append((name, args, log))
            self.log, self.pid = log, 0

    monkeypatch.setattr(peers, "Child", Started)
    workers = peers.start_mirrorflow_workers(Env(tmp_path, "s:1", "t:1", records=1, latency_seconds=0), "link-r0",
                                             ["link"], 2, alias="mf", route={"consumer": {"a": "1"}})
    assert [name for name, _, _ in started] == ["mirrorflow run w1", "mirrorflow run w2"]
    assert [args[-2:] for _, args, _ in started] == [["--worker-id", "w1"], ["--worker-id", "w2"]]
    configs = {args[args.index("--config") + 1] for _, args, _ in started}
    assert len(configs) == 1 and '"consumer": {"a": "1"}' in Path(configs.pop()).read_text()
    assert [log.name for _, _, log in started] == ["mirrorflow-link-r0-w1.log", "mirrorflow-link-r0-w2.log"]
    assert workers.log == started[0][2]
