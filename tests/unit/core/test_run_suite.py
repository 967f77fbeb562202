"""``make test``'s two parts: the markers each runs with, and the one exit code they give together."""

from __future__ import annotations

import pytest

from tests.run_suite import (
    NO_BYTECODE_ENV,
    SPARK_DRIVER_OPTIONS,
    TEST_JVM_OPTIONS,
    combined,
    part_markers,
    suite_environment,
)


@pytest.mark.parametrize(("markers", "chaos", "expected"), [
    ("", False, "not chaos"),
    ("", True, "chaos"),
    ("  ", True, "chaos"),
    ("not kafka and not spark", False, "(not kafka and not spark) and not chaos"),
    ("kafka or spark", True, "(kafka or spark) and chaos"),  # an "or" stays inside its brackets
])
def test_part_markers(markers: str, chaos: bool, expected: str) -> None:
    assert part_markers(markers, chaos) == expected


@pytest.mark.parametrize(("codes", "expected"), [
    ([0, 0], 0),
    ([0, 5], 0),  # the pure part has no fault run: nothing wrong
    ([5, 0], 0),
    ([5, 5], 5),
    ([1, 0], 1),
    ([0, 1], 1),
    ([2, 1], 2),  # the first failure
    ([5, 3], 3),
])
def test_combined(codes: list[int], expected: int) -> None:
    assert combined(codes) == expected


def test_the_tests_jvms_get_their_options_after_the_callers_own() -> None:
    assert suite_environment({"PATH": "/bin"}) == {"PATH": "/bin", "JAVA_TOOL_OPTIONS": TEST_JVM_OPTIONS,
                                                   "SPARK_SUBMIT_OPTS": SPARK_DRIVER_OPTIONS}
    assert suite_environment({"JAVA_TOOL_OPTIONS": "-Xss2m"})["JAVA_TOOL_OPTIONS"] == f"-Xss2m {TEST_JVM_OPTIONS}"
    assert suite_environment({"SPARK_SUBMIT_OPTS": "-Dx=1"})["SPARK_SUBMIT_OPTS"] == f"-Dx=1 {SPARK_DRIVER_OPTIONS}"


def test_no_collector_is_chosen_for_every_jvm() -> None:
    # A JVM given two collectors refuses to start; the brokers choose G1 on their own command line.
    assert "GC" not in TEST_JVM_OPTIONS


def test_the_suite_writes_bytecode_caches_even_where_the_machine_says_not_to() -> None:
    # Found here: PYTHONDONTWRITEBYTECODE=1 made each pytest process take 15.7-16.0 s to collect (6.4 s cached).
    env = suite_environment({"PATH": "/bin", NO_BYTECODE_ENV: "1"})
    assert NO_BYTECODE_ENV not in env and env["PATH"] == "/bin"
