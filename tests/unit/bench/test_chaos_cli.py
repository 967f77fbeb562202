"""bench/chaos.py's bad input: one line naming what is wrong, exit 2, nothing started."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.chaos import main
from bench.chaoslib.context import Settings
from bench.chaoslib.faults import FAULTS, Deck, choose_kinds
from bench.chaoslib.run import _config


@pytest.mark.parametrize(("argv", "message"), [
    (["--kinds", "worker-kill,bogus"], "chaos.py: unknown fault kind 'bogus' (known: "),
    (["--state", "sqlite", "--kinds", "statedb-stop"], "chaos.py: statedb-stop needs --state postgres"),
    (["--toxiproxy", "/nonexistent/toxiproxy-server"],
     "chaos.py: toxiproxy: /nonexistent/toxiproxy-server does not exist (build it with `make toxiproxy`)"),
    (["--toxiproxy", "/bin/true"], "chaos.py: toxiproxy: /bin/true is not a Toxiproxy server"),
    (["--cycles", "0"], "chaos.py: --cycles must be at least 1"),
    (["--brokers", "0"], "chaos.py: --brokers must be at least 1"),
    (["--producer-queue", "0"], "chaos.py: --producer-queue must be at least 1"),
    (["--records-age", "-1"], "chaos.py: --records-age must be at least 0 and under 168 hours"),
    (["--records-age", "200"], "chaos.py: --records-age must be at least 0 and under 168 hours"),
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
    assert set(choose_kinds([], "postgres")) == set(FAULTS) - {"source-txn-hang"}  # --source-transactions only
    assert set(choose_kinds([], "postgres", transactions=True)) == set(FAULTS)
    assert choose_kinds(["net-reset", "net-reset", "topic-add"], "sqlite") == ("net-reset", "topic-add")


def test_the_deck_covers_every_kind_each_round_and_follows_the_seed() -> None:
    import random

    kinds = choose_kinds([], "postgres")
    draws = [Deck(kinds, random.Random(5)).draw for _ in range(2)]
    first = [draws[0]() for _ in range(2 * len(kinds))]
    assert sorted(first[: len(kinds)]) == sorted(kinds) == sorted(first[len(kinds):])
    assert first[: len(kinds)] == [draws[1]() for _ in range(len(kinds))]


@pytest.mark.parametrize(("argv", "message"), [
    (["--kinds", "worker-kill+bogus"], "chaos.py: unknown fault kind 'worker-kill+bogus' (known: "),
    (["--kinds", "source-freeze+worker-kill"], "chaos.py: fault pair 'source-freeze+worker-kill': a pair is "
                                               "MOVER+TROUBLE, a mover one of worker-kill, "),
    (["--kinds", "worker-kill+net-reset+topic-add"], "chaos.py: fault pair 'worker-kill+net-reset+topic-add': "),
    (["--kinds", "worker-kill+statedb-stop"], "chaos.py: statedb-stop needs --state postgres"),
    (["--overlap", "--kinds", "worker-kill,topic-add"], "chaos.py: --overlap pairs a mover (worker-kill, "),
    (["--overlap", "--kinds", "net-reset"], "chaos.py: --overlap pairs a mover"),
])
def test_bad_pairs_exit_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--state", "sqlite", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_every_kind_but_the_retention_gap_is_a_mover_or_a_trouble() -> None:
    from bench.chaoslib.faults import MOVERS, TROUBLES

    assert set(MOVERS) | set(TROUBLES) | {"retention-gap"} == set(FAULTS)
    assert not set(MOVERS) & set(TROUBLES)
    assert choose_kinds(["worker-kill+source-freeze", "topic-add"], "sqlite") == (
        "worker-kill+source-freeze", "topic-add")


def test_the_pair_deck_pairs_every_mover_and_every_trouble_of_the_run_each_round() -> None:
    import random

    from bench.chaoslib.faults import MOVERS, TROUBLES, PairDeck

    kinds = choose_kinds([], "postgres", transactions=True)
    deck = PairDeck(kinds, random.Random(3))
    pairs = [deck.draw().split("+") for _ in range(len(TROUBLES))]
    assert sorted(t for _, t in pairs) == sorted(TROUBLES)
    assert sorted(m for m, _ in pairs[:len(MOVERS)]) == sorted(MOVERS)
    again = PairDeck(kinds, random.Random(3))
    assert [again.draw().split("+") for _ in range(len(TROUBLES))] == pairs  # the seed decides


def test_a_pair_heals_the_mover_inside_the_trouble_then_the_trouble() -> None:
    """A killed worker starts again while the source is still frozen; the trouble lasts its own hold, or at
    least PAIR_TAIL_S past the mover's."""
    from bench.chaoslib.context import Injected
    from bench.chaoslib.faults import PAIR_TAIL_S, together

    events: list[str] = []

    class Stage:
        def stand(self, seconds: float) -> None:
            events.append(f"stand {seconds}")

    def fault(name: str, side: str | None, hold: float):  # type: ignore[no-untyped-def]
        def inject(chaos: object) -> Injected:
            events.append(f"inject {name}")
            return Injected(side, name, hold, lambda: events.append(f"heal {name}"))
        return inject

    injected = together(fault("worker-kill", None, 2.0), fault("source-freeze", "source", 7.5))(Stage())  # type: ignore[arg-type]
    assert (injected.side, injected.detail, injected.hold_s) == ("source", "worker-kill, during source-freeze", 2.0)
    injected.heal()
    assert events == ["inject worker-kill", "inject source-freeze", "heal worker-kill", "stand 5.5",
                      "heal source-freeze"]
    events.clear()
    together(fault("worker-freeze", None, 16.0), fault("net-reset", "target", 1.0))(Stage()).heal()  # type: ignore[arg-type]
    assert events[-2:] == [f"stand {PAIR_TAIL_S}", "heal net-reset"]


def test_a_trouble_that_cannot_be_injected_heals_the_mover_first() -> None:
    from bench.chaoslib.context import Injected
    from bench.chaoslib.faults import together

    healed: list[str] = []

    def mover(chaos: object) -> Injected:
        return Injected(None, "worker-kill", 2.0, lambda: healed.append("worker-kill"))

    def trouble(chaos: object) -> Injected:
        raise RuntimeError("toxiproxy refused")

    with pytest.raises(RuntimeError, match="toxiproxy refused"):
        together(mover, trouble)(object())  # type: ignore[arg-type]
    assert healed == ["worker-kill"]


def test_the_producer_queue_goes_to_the_route_only_when_given(tmp_path: Path) -> None:
    for queue, want in ((None, None), (500, {"queue.buffering.max.messages": "500"})):
        path = _config(tmp_path, {}, "sqlite:///x.db", Settings(producer_queue=queue))
        assert json.loads(path.read_text())["routes"][0].get("producer") == want


def test_old_records_make_only_the_target_forget_producers_within_a_second(tmp_path: Path) -> None:
    """--records-age: the workers' producers on the target are forgotten at once; the harness's own producer at the
    source never is (its order there is what the copy is held to)."""
    from bench.chaoslib.cluster import FORGETFUL
    from bench.chaoslib.producer import Verifier

    assert FORGETFUL["target"] == {"producer.id.expiration.check.interval.ms": "1000"}
    assert int(FORGETFUL["source"]["producer.id.expiration.ms"]) > 168 * 3_600_000  # beyond the records' age
    stamped: list[int] = []

    class Source:
        def produce(self, *args: object, timestamp: int, **kwargs: object) -> None:
            stamped.append(timestamp)

        def flush(self, timeout: float) -> int:
            return 0

        def list_topics(self, topic: str, timeout: float) -> None:
            return None

    verifier = Verifier("127.0.0.1:1", 1.0, 100, age_ms=48 * 3_600_000)
    verifier._producer = Source()  # type: ignore[assignment]
    (stream,) = verifier.add("t", [0])
    before = time.time() * 1000
    assert verifier._send(stream)
    verifier.stop()
    (timestamp,) = stamped
    assert before - 48 * 3_600_000 - 1 <= timestamp <= time.time() * 1000 - 48 * 3_600_000 + 1
