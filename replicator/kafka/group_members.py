"""How many active members consumer groups have, what a group gave one member, and which offsets groups
committed, asked by a child process.

librdkafka 2.16 can abort the whole process while it describes a group (ConsumerGroupDescribe, the
``describe_consumer_groups`` of its admin client): "rdkafka_queue.h: rd_kafka_enq_once_del_source_return:
Assertion `eonce->refcnt > 0' failed", SIGABRT. It happens when the group's coordinator restarts during the
request: two processes describing a group every 0.3 s beside a broker stopped and started at random both
aborted within three restarts, and workers that described their group died so at a source restart in the
fault harness (bench/README.md: "What two runs of 2026-11-29 found"). Listing topics or offsets the same way
lived through every restart.

``AdminClient.list_consumer_group_offsets`` (OffsetFetch naming no partition: the broker answers with the group's
own) crashed a process (SIGSEGV) while a fresh cluster's group coordinator was still loading; asked here, a crash
is an error too (``ClientDied``), and the checkpoint then reads partition by partition (``group_offsets``).

The runbooks ask it while a cluster is in trouble (a failover's check for running workers, its commits), and a
worker asks what the group gave it every minute (``domain.withheld``), so the describe runs in a child process:
an abort there is a clear error (asked again once, the abort being a race with the restart), never the death of
the command or the worker. Settings, secrets included, go to the child on its stdin, not its command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from replicator.domain.withheld import GroupSays, group_says
from replicator.errors import ClusterError

# The child: this module run as a program (tests replace it with one that fails as librdkafka does).
CHILD = [sys.executable, "-m", __name__]
ASKED_AGAIN_AFTER_ABORT = 1
STARTING_S = 30.0  # the child's interpreter and confluent-kafka, on a busy machine
SETTLING_S = 20.0  # replicator.kafka.groups.settled's patience, per group
# Groups whose offsets the child asks at once (one admin client: each a request of its own). A checkpoint of
# 1,000 groups over 2,000 partitions read them in 0.3-0.7 s so, 9-11 s partition by partition (bench/README.md).
OFFSETS_AT_ONCE = 16


class ClientDied(ClusterError):
    """The child's Kafka client died (librdkafka aborted or crashed): nothing it asked is known."""


def active_members(properties: Mapping[str, str], groups: Iterable[str], what: str,
                   timeout: float = 15.0) -> dict[str, int]:
    """Active members of each group (0 for a group that is empty or does not exist), on the cluster of client
    ``properties``; ``what`` names the cluster in errors (ClusterError, ``retriable`` when worth asking again)."""
    wanted = sorted(set(groups))
    if not wanted:
        return {}
    answer = _ask({"ask": "members", "properties": dict(properties), "groups": wanted, "what": what,
                   "timeout": timeout}, what, STARTING_S + len(wanted) * (timeout + 5 + SETTLING_S))
    return {group: int(answer["members"][group]) for group in wanted}


def committed_offsets(properties: Mapping[str, str], groups: Iterable[str], topics: Iterable[str], what: str,
                      timeout: float = 15.0) -> dict[str, dict[tuple[str, int], int]]:
    """Each group's committed offsets on ``topics``, of every partition it has one on (none for a group that does
    not exist); ClientDied when the child's client died, asked twice. (The child keeps only ``topics``: a group
    may hold offsets on many others.)"""
    wanted = sorted(set(groups))
    if not wanted:
        return {}
    bound = STARTING_S + -(-len(wanted) // OFFSETS_AT_ONCE) * (timeout + 5 + SETTLING_S)
    answer = _ask({"ask": "offsets", "properties": dict(properties), "groups": wanted, "topics": sorted(set(topics)),
                   "what": what, "timeout": timeout}, what, bound, "list consumer group offsets")
    return {group: {(topic, partition): offset for topic, partition, offset in answer["offsets"][group]}
            for group in wanted}


def member_assignment(properties: Mapping[str, str], group: str, member_id: str, what: str,
                      timeout: float = 5.0) -> GroupSays | None:
    """What the coordinator says of the member and the others (KIP-848: ConsumerGroupDescribe; see
    ``domain.withheld``), asked once; None when the group does not know the member (yet, or any more)."""
    answer = _ask({"ask": "assignment", "properties": dict(properties), "group": group,
                   "what": what, "timeout": timeout}, what, STARTING_S + timeout + 5)
    return group_says(member_id, [(m, {(t, p) for t, p in owned}, {(t, p) for t, p in target})
                                  for m, owned, target in answer["described"]])


def _ask(request: dict[str, Any], what: str, bound: float, doing: str = "describe consumer groups") -> dict[str, Any]:
    """The child's answer to ``request``; its error, its death (asked again once after a signal; ClientDied) or no
    answer within ``bound`` s as a ClusterError naming ``what`` and what it was ``doing``."""
    for asked in range(ASKED_AGAIN_AFTER_ABORT + 1):
        try:
            done = subprocess.run(CHILD, input=json.dumps(request), capture_output=True, text=True, timeout=bound,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"{what}: {doing}: no answer in {bound:.0f} s",
                               retriable=True) from None
        answer = _answer(done.stdout)
        if answer is not None:
            if "error" in answer:
                raise ClusterError(str(answer["error"]), retriable=bool(answer["retriable"]))
            return answer
        if done.returncode >= 0 or asked == ASKED_AGAIN_AFTER_ABORT:
            break
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    raise ClientDied(f"{what}: {doing}: the Kafka client died ({how}): {_why(done.stderr)}",
                     retriable=done.returncode < 0)


def _answer(stdout: str) -> dict[str, Any] | None:
    """The child's answer: its one JSON line, None when it died before writing it."""
    try:
        answer = json.loads(stdout)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _why(stderr: str) -> str:
    """The line that says why the child died: librdkafka's failed assertion, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if "Assertion" in line), lines[-1] if lines else "no output")
    return said[:300]


def _count_members(admin: Any, groups: list[str], what: str, timeout: float) -> dict[str, int]:
    """In the child: each group described by one admin client."""
    from confluent_kafka import KafkaException

    from replicator.kafka.groups import settled

    out = {}
    for group in groups:
        def describe(group: str = group) -> int:
            future = admin.describe_consumer_groups([group], request_timeout=timeout)[group]
            try:
                return len(future.result(timeout + 5).members)
            except KafkaException as exc:
                if exc.args[0].name() == "GROUP_ID_NOT_FOUND":
                    return 0
                raise

        out[group] = settled(describe, f"{what}: describe consumer group {group!r}", SETTLING_S)
    return out


def _assignment(admin: Any, group: str, timeout: float) -> dict[str, Any]:
    """In the child: each member's id, what it owns and its target assignment (what it owns, for a member of the
    classic protocol, which has none)."""
    description = admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout + 5)
    return {"described": [[member.member_id, _pairs(member.assignment),
                           _pairs(member.target_assignment or member.assignment)]
                          for member in description.members]}


def _group_offsets(admin: Any, groups: list[str], topics: set[str], what: str,
                   timeout: float) -> dict[str, list[list[Any]]]:
    """In the child: each group's ``[topic, partition, offset]`` of every partition of ``topics`` it committed, a
    few groups at once; an error on one of them (other than a topic deleted since) fails the whole answer, as a
    read by partition does."""
    from concurrent.futures import ThreadPoolExecutor

    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

    from replicator.kafka.groups import settled

    def read(group: str) -> list[list[Any]]:
        def fetch() -> list[Any]:
            future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                       request_timeout=timeout)[group]
            try:
                return list(future.result(timeout + 5).topic_partitions or ())
            except KafkaException as exc:
                if exc.args[0].name() == "GROUP_ID_NOT_FOUND":
                    return []
                raise

        out = []
        for tp in settled(fetch, f"{what}: committed offsets of group {group!r}", SETTLING_S):
            if tp.topic not in topics:
                continue
            if tp.error is not None and tp.error.name() != "UNKNOWN_TOPIC_OR_PART":
                raise ClusterError(f"{what}: committed offset of group {group!r} on {tp.topic}-{tp.partition}: "
                                   f"{tp.error.name()}: {tp.error.str()}", retriable=tp.error.retriable())
            if tp.error is None and tp.offset >= 0:
                out.append([tp.topic, tp.partition, tp.offset])
        return out

    with ThreadPoolExecutor(min(OFFSETS_AT_ONCE, len(groups)), thread_name_prefix="group") as pool:
        return dict(zip(groups, pool.map(read, groups), strict=True))


def _pairs(assignment: Any) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for tp in assignment.topic_partitions)


def main() -> None:
    """The child: a request on stdin, one JSON line on stdout (the answer, or the error to raise)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    request = json.load(sys.stdin)
    what, timeout = request["what"], float(request["timeout"])
    answer: dict[str, Any]
    try:
        admin = AdminClient(request["properties"])
        if request["ask"] == "members":
            answer = {"members": _count_members(admin, request["groups"], what, timeout)}
        elif request["ask"] == "offsets":
            answer = {"offsets": _group_offsets(admin, request["groups"], set(request["topics"]), what, timeout)}
        else:
            answer = _assignment(admin, request["group"], timeout)
    except ClusterError as exc:
        answer = {"error": str(exc), "retriable": exc.retriable}
    except KafkaException as exc:  # the admin client refused the settings, or the describe failed
        error = exc.args[0]
        if request["ask"] == "assignment" and error.name() == "GROUP_ID_NOT_FOUND":
            answer = {"described": []}
        else:
            doing = "list consumer group offsets" if request["ask"] == "offsets" else "describe consumer groups"
            answer = {"error": f"{what}: {doing}: {error.name()}: {error.str()}",
                      "retriable": error.retriable() or error.name() in ("_TIMED_OUT", "_TRANSPORT")}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
