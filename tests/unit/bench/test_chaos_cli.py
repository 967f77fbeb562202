"""bench/chaos.py's bad input: one line naming what is wrong, exit 2, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import main
from bench.chaoslib.faults import FAULTS, Deck, choose_kinds


@pytest.mark.parametrize(("argv", "message"), [
    (["--kinds", "worker-kill,bogus"], "chaos.py: unknown fault kind 'bogus' (known: "),
    (["--state", "sqlite", "--kinds", "statedb-stop"], "chaos.py: statedb-stop needs --state postgres"),
    (["--toxiproxy", "/nonexistent/toxiproxy-server"],
     "chaos.py: toxiproxy: /nonexistent/toxiproxy-server does not exist (build it with `make toxiproxy`)"),
    (["--toxiproxy", "/bin/true"], "chaos.py: toxiproxy: /bin/true is not a Toxiproxy server"),
    (["--cycles", "0"], "chaos.py: --cycles must be at least 1"),
])
def test_bad_input_exits_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--state", "sqlite", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_malformed_option_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--cycles", "many"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("chaos.py: argument --cycles: invalid int value: 'many' "
                                       "(see chaos.py --help)\n")


def test_a_file_that_is_not_executable_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "toxiproxy-server"
    binary.write_text("")
    assert main(["--state", "sqlite", "--toxiproxy", str(binary)]) == 2
    assert capsys.readouterr().err == f"chaos.py: toxiproxy: {binary} is not executable\n"


def test_kinds_default_to_all_that_apply() -> None:
    assert "statedb-stop" not in choose_kinds([], "sqlite")
    assert set(choose_kinds([], "postgres")) == set(FAULTS)
    assert choose_kinds(["net-reset", "net-reset", "topic-add"], "sqlite") == ("net-reset", "topic-add")


def test_the_deck_covers_every_kind_each_round_and_follows_the_seed() -> None:
    import random

    kinds = choose_kinds([], "postgres")
    draws = [Deck(kinds, random.Random(5)).draw for _ in range(2)]
    first = [draws[0]() for _ in range(2 * len(kinds))]
    assert sorted(first[: len(kinds)]) == sorted(kinds) == sorted(first[len(kinds):])
    assert first[: len(kinds)] == [draws[1]() for _ in range(len(kinds))]
