"""The fault harness's account of every record (pure): each kind of damage counted exactly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.chaoslib.accounting import (
    Got,
    LossRange,
    Sent,
    account,
    compare_losses,
    longest_pause,
    longest_wait,
    true_losses,
)
from bench.chaoslib.records import Stream, fingerprint, headers_of, key_of, parse_key, value_of

S = Stream("orders", 0, 1)
N = 10


def _sent(stream: Stream = S, n: int = N, base_offset: int = 100) -> list[Sent]:
    return [Sent(base_offset + seq, fingerprint(key_of(stream, seq), value_of(stream, seq, 40),
                                                headers_of(stream, seq), 1_700_000_000_000 + seq))
            for seq in range(n)]


def _got(sent: list[Sent], order: list[int]) -> list[Got]:
    return [Got(seq, sent[seq].fingerprint) for seq in order]


def _changed_byte(sent: list[Sent]) -> list[Got]:
    value = bytearray(value_of(S, 4, 40))
    value[7] ^= 1
    changed = fingerprint(key_of(S, 4), bytes(value), headers_of(S, 4), 1_700_000_000_000 + 4)
    return [Got(seq, changed if seq == 4 else sent[seq].fingerprint) for seq in range(N)]


CASES: dict[str, tuple[Callable[[list[Sent]], list[Got]], list[LossRange], dict[str, object]]] = {
    "all there": (lambda s: _got(s, list(range(N))), [], {}),
    "one lost": (lambda s: _got(s, [0, 1, 2, 4, 5, 6, 7, 8, 9]), [], {"lost": (3,)}),
    "one duplicate": (lambda s: _got(s, [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9]), [], {"duplicates": 1}),
    "a replay after a crash": (lambda s: _got(s, [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8, 9]), [],
                               {"duplicates": 3}),
    "one reordered": (lambda s: _got(s, [0, 1, 3, 2, 4, 5, 6, 7, 8, 9]), [], {"out_of_order": 1}),
    "one changed byte": (_changed_byte, [], {"mismatched": 1}),
    "a number never produced": (lambda s: [*_got(s, list(range(N))), Got(17, b"x" * 16)], [], {"unexpected": 1}),
    "a reported retention loss": (lambda s: _got(s, [0, 1, 2, 6, 7, 8, 9]),
                                  [LossRange("orders", 1, 103, 106)], {"reported_lost": 3}),
    "a report wider than the loss": (lambda s: _got(s, [0, 1, 2, 5, 6, 7, 8, 9]),
                                     [LossRange("orders", 1, 103, 106)], {"reported_lost": 2, "over_reported": 1}),
    "a report of another partition excuses nothing": (lambda s: _got(s, [0, 1, 2, 4, 5, 6, 7, 8, 9]),
                                                      [LossRange("orders", 0, 103, 104)], {"lost": (3,)}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_kind_of_damage_is_counted_exactly(case: str) -> None:
    arrived, reported, expected = CASES[case]
    sent = _sent()
    tally = account({S: sent}, {S: arrived(sent)}, {S: N}, reported).streams[S]
    defaults = {"lost": (), "reported_lost": 0, "over_reported": 0, "duplicates": 0, "out_of_order": 0,
                "mismatched": 0, "unexpected": 0, "checked": N}
    assert {name: getattr(tally, name) for name in defaults} == {**defaults, **expected}


def test_records_past_the_cut_or_never_acknowledged_are_not_lost() -> None:
    sent = _sent()
    sent[2] = Sent(None, sent[2].fingerprint)  # the source never acknowledged it
    tally = account({S: sent}, {S: _got(sent, [0, 1, 3, 4])}, {S: 5}).streams[S]
    assert (tally.lost, tally.checked) == ((), 4)


def test_streams_are_separate_and_totals_add_up() -> None:
    other = Stream("orders", 1, 1)  # the same partition after the topic was created again
    a, b = _sent(S), _sent(other, 4, base_offset=0)
    tally = account({S: a, other: b}, {S: _got(a, [0, 1, 1]), other: _got(b, [0, 2])}, {S: 2, other: 4},
                    foreign=2)
    assert tally.total("lost") == 2 and tally.lost_records() == {(other, 1), (other, 3)}
    assert tally.total("duplicates") == 1 and tally.foreign == 2


def test_true_losses_are_the_deleted_records_that_never_arrived() -> None:
    sent = _sent()  # offsets 100..109
    got = {S: _got(sent, [0, 1, 2, 3, 8, 9])}  # 4..7 missing: offsets 104..107
    truth = true_losses({S: sent}, got, {("orders", 1): 107})  # the log now starts at 107
    assert truth == [LossRange("orders", 1, 104, 107)]
    assert compare_losses(truth, [LossRange("orders", 1, 104, 107)]) == []
    assert compare_losses(truth, [LossRange("orders", 1, 103, 107)]) == [
        "orders[1]: truth [104,107), reported [103,107)"]
    assert compare_losses(truth, []) == ["orders[1]: truth [104,107), reported nothing"]


def test_keys_name_their_record() -> None:
    assert parse_key(key_of(Stream("t", 2, 3), 41)) == (2, 3, 41)
    assert parse_key(b"not/ours") is None and parse_key(None) is None and parse_key(b"\xff/1/2") is None
    assert value_of(S, 1, 40) != value_of(S, 2, 40) and len(value_of(S, 1, 100)) == 100


@pytest.mark.parametrize(("arrivals", "pause"), [
    ([], 10.0),  # nothing arrived during the fault: all of it
    ([1.0, 2.0, 3.0], 7.0),  # the last one, then nothing until the heal
    ([0.5, 6.5, 9.5], 6.0),  # a gap in the middle
    ([4.0], 6.0),
    ([-3.0, 0.0, 12.0], 10.0),  # arrivals outside the window do not count
])
def test_the_longest_pause_is_the_longest_time_nothing_arrived_during_the_fault(arrivals: list[float],
                                                                                  pause: float) -> None:
    assert longest_pause(arrivals, 0.0, 10.0) == pause


def test_the_longest_wait_counts_records_acknowledged_during_the_fault_from_their_acknowledgement() -> None:
    sent = [Sent(0, b"", 1.0), Sent(1, b"", 5.0), Sent(2, b"", 6.0), Sent(None, b""), Sent(4, b"", 9.0),
            Sent(5, b"", 12.0)]
    arrived = {0: 9.0, 1: 8.5, 2: 6.2, 5: 12.1}  # 4 never arrived: counted missing elsewhere, not here
    assert longest_wait(sent, arrived, 4.0, 10.0) == 3.5  # record 1; record 0 was acknowledged before the fault
    assert longest_wait(sent, arrived, 10.5, 11.0) is None  # nothing acknowledged meanwhile
