"""A command as data (name, handler, help, options) and the one function that adds such declarations to argparse."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

LOG_LEVELS = ("debug", "info", "warning", "error")

Handler = Callable[[argparse.Namespace], int]
"""What runs a command: the parsed arguments in, the process exit code out."""


@dataclass(frozen=True, slots=True)
class Option:
    """One argument of a command, as ``add_argument`` takes it; what is left unset keeps argparse's default.

    ``env`` names the variable whose value, when set and not empty, replaces ``default``; it is read when the
    parser is built, never at import. A string default goes through ``type`` (argparse converts it).
    """

    flag: str
    help: str | None = None
    metavar: str | None = None
    dest: str | None = None
    action: Literal["store", "store_true", "store_false", "append"] = "store"
    default: object = None
    env: str | None = None
    required: bool = False
    choices: tuple[str, ...] | None = None
    type: Callable[[str], object] | None = None
    nargs: Literal["?", "*"] | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """``mirrorflow NAME [options]``: parses ``options`` (in that order), then ``run(args)`` is the exit code.

    ``description`` is one paragraph: its line breaks and indentation are layout only (a long one reads best as a
    triple-quoted block).
    """

    name: str
    run: Handler
    help: str
    description: str | None = None
    options: tuple[Option, ...] = ()


@dataclass(frozen=True, slots=True)
class Group:
    """``mirrorflow NAME ACTION [options]``: a command per action (``args.action`` names the one given)."""

    name: str
    help: str
    commands: tuple[Command, ...]


def add_command(subparsers: Any, declared: Command | Group) -> None:
    """Add a declared command, or a group with its commands, to argparse's ``subparsers``."""
    if isinstance(declared, Group):
        parser = subparsers.add_parser(declared.name, help=declared.help)
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        for command in declared.commands:
            add_command(actions, command)
        return
    description = " ".join(declared.description.split()) if declared.description else None
    parser = subparsers.add_parser(declared.name, help=declared.help, description=description)
    for option in declared.options:
        parser.add_argument(option.flag, **_keywords(option))
    # `mirrorflow status --log-level info` as well as `mirrorflow --log-level info status`: given after the
    # command it wins, not given there it leaves the one before the command (or its default) alone.
    parser.add_argument("--log-level", choices=LOG_LEVELS, default=argparse.SUPPRESS,
                        help="log verbosity on stderr (as before the command)")
    parser.set_defaults(handler=declared.run)


def _keywords(option: Option) -> dict[str, Any]:
    """``add_argument``'s keywords: only those the option sets (a flag's default stays False, and a positional
    takes no ``required``), the default read from the environment when the option names a variable."""
    default = (os.environ.get(option.env) or option.default) if option.env else option.default
    given = {"action": option.action, "help": option.help, "metavar": option.metavar, "dest": option.dest,
             "default": default, "required": option.required or None, "choices": option.choices,
             "type": option.type, "nargs": option.nargs}
    return {key: value for key, value in given.items() if value is not None}
