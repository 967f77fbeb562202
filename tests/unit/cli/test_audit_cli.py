"""``mirrorflow audit`` without clusters: help, bad input (exit 2), the window, and the printed summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.cli.audit_cmd import render
from replicator.cli.main import build_parser, main
from replicator.domain.audit import BucketKey, BucketResult
from replicator.domain.audit_report import AuditReport, AuditWindow
from replicator.domain.offset_ranges import to_ranges
from replicator.errors import UsageError
from replicator.runbooks.audit.errors import AuditFailed
from replicator.runbooks.audit.spec import AuditSpec, TopicSpec
from replicator.runbooks.audit.window import audit_window, parse_time

T0 = 1_789_995_240_000  # 2026-09-21T12:54:00Z


def test_audit_has_help_and_is_no_longer_planned(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["audit", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for option in ("--route NAME", "--from TIME", "--to TIME", "--topic TOPIC", "--bucket", "--json",
                   "MIRRORFLOW_SPARK_MASTER"):
        assert option in out, option
    assert "planned" not in (build_parser().epilog or "")  # every command of DESIGN.md is there


@pytest.mark.parametrize(("argv", "message"), [
    (["--route", "nope", "--from", "2026-01-01", "--to", "2026-01-02"], "unknown route 'nope' (known: r)"),
    (["--route", "r", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"],
     "--from 2026-01-02T00:00:00Z is not before --to 2026-01-01T00:00:00Z"),
    (["--route", "r", "--from", "2026-01-01T10:00", "--to", "2026-01-01T10:00"], "is not before --to"),
    (["--route", "r", "--from", "yesterday-ish", "--to", "now"], "--from: cannot read 'yesterday-ish' as a time"),
    (["--route", "r", "--from", "2026-01-01", "--to", "P1D"], "--to: cannot read 'P1D'"),
    (["--route", "r", "--from", "2026-01-01", "--to", "2026-01-02", "--bucket", "1w"], "bucket '1w'"),
])
def test_bad_input_exits_2_before_any_cluster_is_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       argv: list[str], message: str) -> None:
    config = tmp_path / "m.yaml"  # unreachable clusters: exit 2 must come before any connection
    config.write_text("clusters: {a: {bootstrap.servers: '127.0.0.1:1', sasl.password: s3cret},"
                      " b: {bootstrap.servers: '127.0.0.1:2'}}\n"
                      "routes: [{name: r, source: a, target: b, topics: [x]}]\n"
                      f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    assert main(["audit", "--config", str(config), *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "s3cret" not in captured.err + captured.out
    assert len(captured.err.strip().splitlines()) == 1


@pytest.mark.parametrize(("text", "ms"), [
    ("2026-09-21T12:54:00Z", T0), ("2026-09-21 12:54", T0), ("2026-09-21T14:54:00+02:00", T0),
    ("2026-09-21T12:54:00.250Z", T0 + 250), ("2026-09-21", T0 - (12 * 60 + 54) * 60_000),
])
def test_times_are_iso_8601_and_utc_unless_they_say_otherwise(text: str, ms: int) -> None:
    assert parse_time(text, "--from") == ms


def test_window_takes_now_and_a_bucket() -> None:
    window = audit_window("2026-01-01", "now", "5m")
    assert window.bucket_ms == 300_000 and window.end_ms > window.start_ms
    with pytest.raises(UsageError, match="start"):
        audit_window("now", "2026-01-01")


def _report() -> AuditReport:
    window = AuditWindow(T0, T0 + 180_000, 60_000)
    clean = BucketResult(BucketKey("orders", 0, T0), 10, 10, 0)
    lost = BucketResult(BucketKey("orders", 1, T0 + 60_000), 9, 9, 0, 2, 1, 1,
                        to_ranges([40, 41]), to_ranges([44]), to_ranges([3]))
    tail = BucketResult(BucketKey("pay", 0, T0 + 120_000), 6, 2, 4)
    return AuditReport("k1", "p2b", window, {"orders": "primary.orders", "pay": "primary.pay"},
                       (clean, lost, tail), T0 + 200_000, T0 + 209_000, ("one note",))


def test_the_summary_table_shows_topics_and_every_bucket_with_findings() -> None:
    text = render(_report().summary())
    lines = text.splitlines()
    assert lines[0].split() == ["topic", "replica", "source", "target", "pending", "missing", "duplicates", "extra",
                                "status"]
    assert lines[1].split() == ["orders", "primary.orders", "19", "19", "0", "2", "1", "1", "missing"]
    assert lines[2].split() == ["pay", "primary.pay", "6", "2", "4", "0", "0", "0", "clean"]
    [finding] = [line for line in lines if "12:55" in line]
    assert finding.split() == ["orders", "1", "2026-09-21", "12:55:00", "9", "9", "0", "missing", "40-41", "(2)",
                               "44", "(1)", "3", "(1)"]
    assert "note: one note" in lines
    assert lines[-1].startswith("audit k1: missing — 25 source records in 3 buckets")


def test_an_audit_that_found_no_record_in_its_window_says_so() -> None:
    """#15: a demo's first audit (the last full hour) compared nothing and said only "clean"."""
    empty = AuditReport("k2", "p2b", AuditWindow(T0, T0 + 3_600_000, 60_000), {"orders": "primary.orders"}, (),
                        T0, T0 + 1)
    text = render(empty.summary())
    assert "note: no record of the route's topics has a time in the window" in text
    assert "nothing was compared" in text
    assert not any("nothing was compared" in n for n in _report().summary()["notes"])


def test_report_and_spec_survive_json() -> None:
    report = _report()
    assert AuditReport.from_dict(report.to_dict()) == report
    spec = AuditSpec("k1", "p2b", "primary", "backup", report.window,
                     (TopicSpec("orders", "primary.orders", 3, 2, (5, None, 0)),), "/etc/m.yaml", ("n",))
    assert AuditSpec.from_dict(spec.to_dict()) == spec
    assert spec.topics[0].committed_of(1) is None and spec.topics[0].committed_of(7) is None


def test_a_failed_audit_names_the_first_loss() -> None:
    failure = AuditFailed(_report().summary())
    assert str(failure) == ("route p2b: 2 source records missing on the target in 1 bucket; first: orders "
                            "partition 1 bucket 2026-09-21T12:55:00+00:00 offsets 40-41 (audit k1)")
    assert failure.exit_code == 1


def test_spec_files_that_cannot_be_read_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"audit spec .*missing.json: cannot read"):
        AuditSpec.read(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"run_key": "k"}')
    with pytest.raises(UsageError, match=r"bad.json: malformed"):
        AuditSpec.read(tmp_path / "bad.json")
