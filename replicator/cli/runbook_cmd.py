"""What the runbook commands share: progress lines, the run printed or as JSON, a failure after its result."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replicator.cli.commands import Option
from replicator.cli.output import as_json, say

if TYPE_CHECKING:
    from replicator.domain.resume_point import ResumePoint


def run_options(runbook: str) -> tuple[Option, ...]:
    """``--dry-run``, ``--json`` and ``--restart``: what every command run by the runbook engine takes."""
    return (
        Option("--dry-run", action="store_true", help="show every step, change nothing"),
        Option("--json", action="store_true", help="print the run as JSON (progress goes to stderr)"),
        Option("--restart", action="store_true",
               help=f"abandon the route's unfinished {runbook} run and start a new one"),
    )


def fence_options(where: str, lifted: str) -> tuple[Option, ...]:
    """``--fence`` and ``--accept-bypass`` of a runbook that can fence ``where`` (lifted ``lifted``)."""
    return (
        Option("--fence", action="store_true",
               help=f"before the drain, deny WRITE on {where} to every principal but routes[].fence.exempt (ACLs), "
               "then watch their ends for routes[].fence.watch s: records written past the fence lift it and stop "
               f"the run (the route left as it was); lifted {lifted}"),
        Option("--accept-bypass", action="store_true",
               help="with --fence: go on when records were written past the fence (named in the run's notes)"),
    )


def run_and_print(args: argparse.Namespace, run: Callable[[Callable[[str], None]], Any],
                  summary: Callable[[Any], dict[str, Any]], render: Callable[[Any], str]) -> int:
    """``run(progress)``, then the run rendered (``--json``: as JSON, progress on stderr); 0 when it is done.

    A failed step raises the runbook's error after its run was printed as JSON (with ``--json``).
    """
    from replicator.runbooks.engine import RunFailed

    try:
        done = run(progress_of(args))
    except RunFailed as exc:
        if args.json:
            print(as_json(exc.summary))
        raise
    print(as_json(summary(done)) if args.json else render(done))
    return 0


def print_result(args: argparse.Namespace, result: Any, render: Callable[[Any], str],
                 failure: Exception | None = None) -> int:
    """The result rendered (``--json``: as JSON), then ``failure`` on stderr; 1 when there was one, else 0."""
    print(as_json(result) if args.json else render(result))
    if failure is not None:
        sys.stderr.write(f"mirrorflow: error: {failure}\n")
        return 1
    return 0


def progress_of(args: argparse.Namespace) -> Callable[[str], None]:
    """Where progress lines go: stderr with ``--json`` (stdout holds the JSON), else stdout."""
    return to_stderr if args.json else say


def to_stderr(line: str) -> None:
    """A progress line on stderr (stdout holds the JSON)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def point_row(point: ResumePoint, result: str) -> list[Any]:
    """Where a group resumes, as a row of the failover and failback tables, then what became of it."""
    return [point.group, point.topic, point.partition, point.source_offset, "->", point.target_topic,
            point.target_offset, point.describe(), result]


def outcome(commit: Any) -> str:
    """What became of one group's commit (``commit`` is a GroupCommit), in a few words."""
    target = commit.point.target_offset
    return {
        "planned": f"to commit {target}",
        "written": f"committed {target}",
        "failed": f"failed: {commit.error}",
        "up-to-date": "already there",
        "target-ahead": f"kept: ahead at {commit.current}",
        "active-members": "kept: active members",
        "untranslated": "-",
    }[commit.outcome.value]
