"""The order ``make test`` hands modules to its processes: longest first, from measured seconds."""

from __future__ import annotations

import json
from pathlib import Path

from tests.module_order import SECONDS_FILE, UNKNOWN_S, load_seconds, longest_first, module_totals


def test_modules_go_longest_first_and_keep_their_tests_in_order() -> None:
    items = ["a1", "a2", "b1", "c1", "c2", "c3"]
    modules = ["a.py", "a.py", "b.py", "c.py", "c.py", "c.py"]
    assert longest_first(items, modules, {"a.py": 1.0, "b.py": 300.0, "c.py": 20.0}) == \
        ["b1", "c1", "c2", "c3", "a1", "a2"]


def test_a_module_never_measured_counts_as_a_middling_one() -> None:
    modules = ["short.py", "new.py", "long.py"]
    seconds = {"short.py": UNKNOWN_S - 1, "long.py": UNKNOWN_S + 1}
    assert longest_first(modules, modules, seconds) == ["long.py", "new.py", "short.py"]


def test_modules_of_equal_seconds_keep_the_collection_order() -> None:
    modules = ["z.py", "y.py", "x.py"]
    assert longest_first(modules, modules, {}) == modules


def test_module_totals_add_every_phase_of_every_test() -> None:
    durations = [("tests/a.py::t1", 1.0), ("tests/a.py::t1", 0.25), ("tests/b.py::C::t", 2.0),
                 ("tests/a.py::t2[x]", 0.5)]
    assert module_totals(durations) == {"tests/a.py": 1.8, "tests/b.py": 2.0}


def test_a_missing_or_broken_file_orders_nothing(tmp_path: Path) -> None:
    assert load_seconds(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert load_seconds(tmp_path / "broken.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert load_seconds(tmp_path / "list.json") == {}


def test_the_committed_seconds_name_test_modules_that_exist() -> None:
    seconds = load_seconds(SECONDS_FILE)
    assert seconds, f"{SECONDS_FILE} is empty or unreadable"
    repo = SECONDS_FILE.parent.parent
    gone = sorted(path for path in seconds if not (repo / path).is_file())
    assert not gone, f"{SECONDS_FILE.name} names modules that are gone (rewrite it: --module-seconds-out): {gone}"
    assert json.loads(SECONDS_FILE.read_text()) == seconds  # numbers only
