"""A declared command becomes the argparse parser it describes: flags, defaults, environment, groups, help."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from replicator.cli.commands import Command, Group, Option, add_command


def _ran(args: argparse.Namespace) -> int:
    return 0


def _listed(args: argparse.Namespace) -> int:
    return 1


SHOW = Command(
    "show", _ran, help="show things",
    description="""
        One paragraph,
            whatever its layout.
    """,
    options=(
        Option("--route", action="append", metavar="NAME", help="a route"),
        Option("--from", dest="start", required=True, metavar="TIME"),
        Option("--mode", choices=("a", "b"), default="a"),
        Option("--json", action="store_true"),
        Option("--no-airflow", dest="airflow", action="store_false"),
        Option("--home", type=Path, default=Path("home"), env="TEST_COMMANDS_HOME"),
        Option("--worker-id", env="TEST_COMMANDS_WORKER"),
    ),
)
TABLES = Group("tables", help="a group", commands=(Command("list", _listed, help="list", options=(Option("name"),)),))


class _RawParser(argparse.ArgumentParser):
    """Shows descriptions as they are given (argparse's default formatter would re-wrap any layout)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_RawParser)
    for declared in (SHOW, TABLES):
        add_command(subparsers, declared)
    return parser


@pytest.mark.parametrize(("argv", "env", "expected"), [
    (["show", "--from", "now"], {},
     {"handler": _ran, "route": None, "start": "now", "mode": "a", "json": False, "airflow": True,
      "home": Path("home"), "worker_id": None}),
    (["show", "--from", "now", "--route", "r1", "--route", "r2", "--mode", "b", "--json", "--no-airflow"], {},
     {"route": ["r1", "r2"], "mode": "b", "json": True, "airflow": False}),
    (["show", "--from", "now"], {"TEST_COMMANDS_HOME": "/h", "TEST_COMMANDS_WORKER": "w1"},
     {"home": Path("/h"), "worker_id": "w1"}),  # the environment's string goes through the option's type
    (["show", "--from", "now"], {"TEST_COMMANDS_HOME": "", "TEST_COMMANDS_WORKER": ""},
     {"home": Path("home"), "worker_id": None}),  # set but empty: the declared default
    (["show", "--from", "now", "--home", "/x", "--worker-id", "w2"], {"TEST_COMMANDS_HOME": "/h"},
     {"home": Path("/x"), "worker_id": "w2"}),  # the command line wins
    (["tables", "list", "orders"], {}, {"handler": _listed, "action": "list", "name": "orders"}),
])
def test_a_declaration_parses_as_declared(argv: list[str], env: dict[str, str], expected: dict[str, Any],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TEST_COMMANDS_HOME", "TEST_COMMANDS_WORKER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = vars(_parser().parse_args(argv))
    assert {key: args[key] for key in expected} == expected


@pytest.mark.parametrize("argv", [["show"], ["show", "--from", "now", "--mode", "c"], ["tables", "list"],
                                  ["tables"]])
def test_what_the_declaration_does_not_allow_is_bad_usage(argv: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        _parser().parse_args(argv)
    assert done.value.code == 2


def test_help_shows_the_declared_texts_and_the_description_as_one_paragraph(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["show", "--help"])
    shown = capsys.readouterr().out
    assert "usage: t show [-h] [--route NAME] --from TIME [--mode {a,b}]" in shown
    assert "\nOne paragraph, whatever its layout.\n" in shown
    assert "--route NAME" in shown and "a route" in shown
    with pytest.raises(SystemExit):
        _parser().parse_args(["--help"])
    assert "show" in (listing := capsys.readouterr().out) and "show things" in listing
    assert "a group" in listing
