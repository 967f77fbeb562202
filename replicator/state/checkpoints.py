"""Repository functions of checkpoints: take a session, return domain objects; upserts.

One row per (route, group, source topic, partition) holds the latest translated
checkpoint, updated in place, so a retried run is harmless; each run adds one
``mf_checkpoint_run`` row with its figures.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus, Partition
from replicator.domain.checkpoint_run import CheckpointRun
from replicator.domain.target_group import TargetOutcome
from replicator.state.models import CheckpointRow, CheckpointRunRow
from replicator.state.times import utc


def save_checkpoints(session: Session, route: str, checkpoints: Iterable[Checkpoint], at: dt.datetime,
                     source_ends: Mapping[Partition, int] | None = None,
                     target_ends: Mapping[Partition, int] | None = None) -> int:
    """Insert or update the translated checkpoints (untranslated ones are skipped), with the source partition's
    and the replica partition's ends the run read (a lag each; None where not read); returns how many."""
    wanted = {(c.group, c.topic, c.partition): (c, c.target_offset) for c in checkpoints
              if c.target_offset is not None}
    if not wanted:
        return 0
    groups = sorted({group for group, _, _ in wanted})
    known = session.execute(
        select(CheckpointRow.id, CheckpointRow.group_id, CheckpointRow.topic, CheckpointRow.partition)
        .where(CheckpointRow.route == route, CheckpointRow.group_id.in_(groups))
    )
    ids = {(group, topic, partition): row_id for row_id, group, topic, partition in known}
    inserts: list[dict[str, object]] = []
    updates: list[dict[str, object]] = []
    for key, (checkpoint, target_offset) in wanted.items():
        values = {
            "source_offset": checkpoint.source_offset, "target_topic": checkpoint.target_topic,
            "target_offset": target_offset, "status": checkpoint.status.value,
            "max_repeats": checkpoint.max_repeats, "checkpointed_at": at,
            "source_end": (source_ends or {}).get((checkpoint.topic, checkpoint.partition)),
            "target_end": (target_ends or {}).get((checkpoint.target_topic, checkpoint.partition)),
        }
        row_id = ids.get(key)
        if row_id is None:
            inserts.append({"route": route, "group_id": checkpoint.group, "topic": checkpoint.topic,
                            "partition": checkpoint.partition, **values})
        else:
            updates.append({"id": row_id, **values})
    # The ORM's bulk statements (one executemany each), not a unit of work of one object per row: a run over
    # 1,000 groups writes ~16,000 rows, which took seconds as objects.
    if inserts:
        session.execute(insert(CheckpointRow), inserts)
    if updates:
        session.execute(update(CheckpointRow), updates)
    return len(wanted)


def checkpoints(session: Session, route: str, group: str | None = None) -> list[tuple[Checkpoint, dt.datetime]]:
    """The stored checkpoints of ``route`` (of one group if given) and when each was taken, sorted."""
    query = select(CheckpointRow).where(CheckpointRow.route == route)
    if group is not None:
        query = query.where(CheckpointRow.group_id == group)
    rows = session.scalars(query.order_by(CheckpointRow.group_id, CheckpointRow.topic, CheckpointRow.partition))
    return [
        (Checkpoint(r.group_id, r.topic, r.partition, r.source_offset, r.target_topic, r.target_offset,
                    CheckpointStatus(r.status), r.max_repeats), utc(r.checkpointed_at))
        for r in rows
    ]


def record_checkpoint_run(session: Session, run: CheckpointRun) -> int:
    """Store one run's figures; returns its id."""
    skipped = "\n".join(f"{g}: {why}" for g, why in sorted(run.skipped_groups.items()))
    failed = "\n".join(f"group {g}: {why}" for g, why in sorted(run.failed_groups.items()))
    row = CheckpointRunRow(
        route=run.route, status=run.status.value, started_at=run.started_at, finished_at=run.finished_at,
        groups=len(run.groups), checkpoints=len(run.translated),
        untranslated=len(run.checkpoints) - len(run.translated),
        target_commits=sum(t.outcome == TargetOutcome.WRITTEN for t in run.target_offsets),
        skipped_groups=skipped or None, error="\n".join(filter(None, [run.error, failed])) or None,
    )
    session.add(row)
    session.flush()
    return row.id


def last_run_started(session: Session, route: str) -> dt.datetime | None:
    """When the route's latest recorded checkpoint run started (None if it never ran)."""
    started = session.scalar(
        select(CheckpointRunRow.started_at).where(CheckpointRunRow.route == route)
        .order_by(CheckpointRunRow.started_at.desc()).limit(1)
    )
    return None if started is None else utc(started)

