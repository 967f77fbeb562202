"""`mirrorflow backfill` refuses incomplete or mixed ranges as bad input (2), before any cluster is asked."""

from __future__ import annotations

import pytest

from replicator.cli.main import main


@pytest.mark.parametrize(("args", "message"), [
    ([], "give a time range (--from and --to) or offsets (--from-offset [--to-offset])"),
    (["--from", "2026-11-01"], "a time range needs both --from and --to"),
    (["--from", "2026-11-01", "--to", "now", "--from-offset", "0=1"], "give a time range"),
    (["--to-offset", "0=5"], "--to-offset needs --from-offset"),
    (["--from-offset", "0=5", "--to-offset", "0=2"], "partition 0: --to-offset 2 is before --from-offset 5"),
])
def test_bad_ranges_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = main(["backfill", "--config", str(tmp_path / "absent.yaml"), "--route", "r", "--topic", "t", *args])
    assert code == 2
    assert message in capsys.readouterr().err
