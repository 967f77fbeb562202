"""The whole suite in two parts (``make test``): everything but the short fault runs, in processes side by side;
then the short fault runs, side by side with each other and nothing else.

    python tests/run_suite.py [--processes N] [--markers EXPR] [-- PYTEST_ARGS...]

Part one runs in ``--processes`` pytest processes (pytest-xdist, one test module per process at a
time, so a module's clusters and Spark session stay in one process): most tests wait on brokers,
Spark or Airflow rather than compute. Measured on 2 cores (2026-11-29): two processes kept the CPUs
66 % busy, so a third one fills the waits. Part two, the fault harness's short form (marker
``chaos``), runs after it, its runs in two processes (``--dist load``) when ``--processes`` > 1:
they judge how soon records flow again after each fault, and a machine loaded by part one's tests
would make that judgement about the machine; two fault runs side by side took 226 s instead of
300-318 s one after the other, well within the harness's bounds. ``--markers`` narrows both parts
(``"not kafka and not spark and not airflow"``: the pure part). Exit code: the first part's failure,
else the second's; 5 only when neither collected a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def part_markers(markers: str, chaos: bool) -> str:
    """The ``-m`` expression of one part (pure)."""
    own = "chaos" if chaos else "not chaos"
    return f"({markers}) and {own}" if markers.strip() else own


# The JVMs the tests start (brokers, Spark's daemons, drivers and executors) live seconds to minutes; with the C1
# compiler alone they start on about 60 % of the CPU (a broker pair: ready in 6-7 s on 7-9 s of CPU instead of
# 10-11 s on 12-13 s; a small local Spark job: 13.4 s instead of 17.2 s), and the 2 cores are what the suite
# waits for. C2's faster code never pays back in a test. The jars they load are the project's own (fetched from
# Maven Central, or PySpark's wheel), so the suite's JVMs skip verifying their bytecode at each start (a saving for
# tests only: nothing outside the suite gets these options). Each JVM says "Picked up JAVA_TOOL_OPTIONS" once.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
# Spark's drivers (spark-submit's JVM, and PySpark's in the test process) with the serial collector: G1's
# concurrent threads cost a short JVM more than they save. Only there: a JVM given two collectors refuses to
# start, and the brokers ask for G1 on their command line. With the options above, a local Spark session and a
# small job took 22.4-24.8 s of CPU instead of 28.3-29.1 s.
SPARK_DRIVER_OPTIONS = "-XX:+UseSerialGC"


# A machine may set PYTHONDONTWRITEBYTECODE (this one does). Then every process compiles each module it imports
# from source, and pytest rewrites each test module's asserts anew: collecting the suite took 15.7-16.0 s of one
# core per pytest process instead of 6.4 s once cached, and each `mirrorflow` command, worker and Airflow task the
# tests start compiled ~100 of the project's modules (0.2 s of a `status`). The suite writes those caches
# (``__pycache__``, ignored by git).
NO_BYTECODE_ENV = "PYTHONDONTWRITEBYTECODE"


def suite_environment(environ: dict[str, str]) -> dict[str, str]:
    """The pytest processes' environment (pure): the caller's, with ``TEST_JVM_OPTIONS`` after its own JVM options,
    ``SPARK_DRIVER_OPTIONS`` after its own ``SPARK_SUBMIT_OPTS`` (spark-class gives those to spark-submit), and
    bytecode caches written (``NO_BYTECODE_ENV`` left out)."""
    own = environ.get("JAVA_TOOL_OPTIONS", "")
    spark = environ.get("SPARK_SUBMIT_OPTS", "")
    return {**{k: v for k, v in environ.items() if k != NO_BYTECODE_ENV},
            "JAVA_TOOL_OPTIONS": f"{own} {TEST_JVM_OPTIONS}".strip(),
            "SPARK_SUBMIT_OPTS": f"{spark} {SPARK_DRIVER_OPTIONS}".strip()}


def combined(codes: list[int]) -> int:
    """One exit code for the parts (pure): a failure of any part wins; 5 ("no tests") only when every part had none."""
    failures = [code for code in codes if code not in (0, 5)]
    if failures:
        return failures[0]
    return 5 if all(code == 5 for code in codes) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--processes", type=int, default=3, help="pytest processes for part one (default 3)")
    parser.add_argument("--markers", default="", help="a pytest -m expression narrowing both parts")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments, after --")
    args = parser.parse_args(argv)
    extra = [a for a in args.pytest_args if a != "--"]
    parallel = ["-n", str(args.processes), "--dist", "loadfile"] if args.processes > 1 else []
    paired = ["-n", "2", "--dist", "load"] if args.processes > 1 else []  # the fault runs are tests of one module
    parts = [("part 1/2: all but the short fault runs" + (f", {args.processes} processes" if parallel else ""),
              [*parallel, "-m", part_markers(args.markers, chaos=False)]),
             ("part 2/2: the short fault runs" + (", side by side" if paired else ""),
              [*paired, "-m", part_markers(args.markers, chaos=True)])]
    codes = []
    for title, options in parts:
        print(f"== {title}", flush=True)
        began = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", *options, *extra],
                               env=suite_environment(dict(os.environ)))
        print(f"== {title}: exit code {code} in {time.monotonic() - began:.0f} s", flush=True)
        codes.append(code)
    return combined(codes)


if __name__ == "__main__":
    sys.exit(main())
