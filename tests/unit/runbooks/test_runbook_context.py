"""Ctx: what every runbook step gets; a step that saves through it keeps what it did even when it then fails."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from replicator.config import parse_config
from replicator.domain.runbook import StepStatus
from replicator.runbooks.context import Ctx
from replicator.runbooks.engine import Runbook, RunFailed, StepFailed, StepResult, run_step
from replicator.testing.runbook import MemoryRunStore
from tests.runbook_drill import BOOK, T0, Drill, DrillRequest, DrillRun

CONFIG = parse_config("clusters:\n  a: {bootstrap.servers: 'a:9092'}\n  b: {bootstrap.servers: 'b:9092'}\n"
                      "routes: [{name: r, source: a, target: b, topics: [t]}]\n")


def check(ctx: Ctx[DrillRun], run: DrillRun) -> StepResult[DrillRun]:
    ctx.say(f"checking {ctx.route.name} on {ctx.config.cluster(ctx.route.target).bootstrap_servers}")
    saved = ctx.save(replace(run, note="route marked"))  # must survive what follows
    if run.request.target == "fails-after-saving":
        raise StepFailed("the target refused the next call")
    return StepResult(saved, StepStatus.DONE, "checked")


BOOK_WITH_CTX: Runbook[DrillRun, Ctx[DrillRun]] = replace(BOOK, steps={Drill.CHECK: check, Drill.MOVE: check})  # type: ignore[arg-type]


@pytest.mark.parametrize(("target", "status"), [("b", StepStatus.DONE), ("fails-after-saving", StepStatus.FAILED)])
def test_what_a_step_saved_through_its_context_is_kept(target: str, status: StepStatus) -> None:
    store: MemoryRunStore[DrillRun] = MemoryRunStore()
    run = store.save(DrillRun(DrillRequest("r", target=target)))
    said: list[str] = []

    def context(save):  # type: ignore[no-untyped-def]
        return Ctx(CONFIG, CONFIG.routes[0], said.append, save)

    if status == StepStatus.FAILED:
        with pytest.raises(RunFailed):
            run_step(BOOK_WITH_CTX, run, Drill.CHECK, context, store.save, said.append, lambda: T0)
    else:
        run_step(BOOK_WITH_CTX, run, Drill.CHECK, context, store.save, said.append, lambda: T0)
    stored = store.load(1)
    assert stored.note == "route marked"
    assert stored.step(Drill.CHECK).status == status
    assert said[0] == "checking r on b:9092"


def test_a_context_is_frozen() -> None:
    ctx: Ctx[DrillRun] = Ctx(CONFIG, CONFIG.routes[0], print, lambda run: run)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.route = CONFIG.routes[0]  # type: ignore[misc]
