"""kafka.group_members: a group's active members asked by a child process, so that librdkafka aborting while it
describes a group (an assertion, SIGABRT, when the coordinator restarts mid-request) is a clear, retriable error of
the command, never its death; and the members a real cluster counts."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from replicator.errors import ClusterError
from replicator.kafka import group_members
from replicator.kafka.admin import create_topics
from replicator.kafka.group_members import active_members
from tests.conftest import Endpoint
from tests.kafka_io import leave_group

# What librdkafka 2.16 printed before aborting (the fault harness, a worker describing its group at a source restart).
ASSERTION = ("python: rdkafka_queue.h:1086: rd_kafka_enq_once_del_source_return: "
             "Assertion `eonce->refcnt > 0' failed.")


def child(tmp_path: Path, aborts: int, answer: str = '{"members": {"g": 2}}') -> list[str]:
    """A child that reads its request (kept in request.json), aborts as librdkafka does its first ``aborts``
    times, then answers."""
    script = tmp_path / "child.py"
    script.write_text(f"""
import os, sys
from pathlib import Path
here = Path({str(tmp_path)!r})
(here / "request.json").write_text(sys.stdin.read())
runs = here / "runs"
runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
if len(runs.read_text()) <= {aborts}:
    sys.stderr.write("%3|librdkafka noise before it\\n" + {ASSERTION!r} + "\\n")
    sys.stderr.flush()
    os.abort()
print({answer!r})
""")
    return [sys.executable, str(script)]


def runs(tmp_path: Path) -> int:
    return len((tmp_path / "runs").read_text())


def test_a_child_that_aborts_every_time_is_a_retriable_error_naming_the_cluster_and_the_assertion(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=99))
    with pytest.raises(ClusterError) as caught:
        active_members({"bootstrap.servers": "b:9092"}, ["g"], "route r: cluster 'backup'")
    message = str(caught.value)
    assert message.startswith("route r: cluster 'backup': describe consumer groups: the Kafka client died "
                              "(signal 6): ")
    assert message.endswith(ASSERTION)
    assert "\n" not in message
    assert caught.value.retriable  # a worker's start waits and asks again; a runbook says so and can be rerun
    assert runs(tmp_path) == 2  # asked again once: the abort is a race with the coordinator's restart


def test_an_abort_is_asked_again_once_and_the_answer_then_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=1))
    assert active_members({"bootstrap.servers": "b:9092"}, ["g", "g"], "cluster 'backup'") == {"g": 2}
    assert runs(tmp_path) == 2


def test_settings_and_secrets_go_to_the_child_on_its_stdin_not_its_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    command = child(tmp_path, aborts=0)
    monkeypatch.setattr(group_members, "CHILD", command)
    properties = {"bootstrap.servers": "b:9092", "sasl.password": "s3cret-pw"}
    active_members(properties, ["g"], "cluster 'backup'")
    assert "s3cret-pw" in (tmp_path / "request.json").read_text()
    assert not any("s3cret-pw" in part for part in command)


def test_an_error_the_child_reports_is_raised_as_it_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = '{"error": "cluster \'backup\': describe consumer group \'g\': _TRANSPORT: down", "retriable": true}'
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=0, answer=said))
    with pytest.raises(ClusterError, match="cluster 'backup': describe consumer group 'g': _TRANSPORT: down") \
            as caught:
        active_members({"bootstrap.servers": "b:9092"}, ["g"], "cluster 'backup'")
    assert caught.value.retriable
    assert runs(tmp_path) == 1


def test_no_groups_asks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=99))
    assert active_members({"bootstrap.servers": "b:9092"}, [], "cluster 'backup'") == {}
    assert not (tmp_path / "runs").exists()


def test_the_child_counts_the_members_a_real_cluster_has(primary: Endpoint, unique_name: str) -> None:
    topic = unique_name
    create_topics(primary.bootstrap_servers, {topic: 1})
    member = Consumer({**primary.properties, "group.id": unique_name, "group.protocol": "consumer"})
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 60
        members = active_members(primary.properties, [unique_name, f"{unique_name}-none"], "cluster 'primary'")
        while members[unique_name] != 1 and time.monotonic() < deadline:
            member.consume(1, 0.2)  # joins from its polls
            members = active_members(primary.properties, [unique_name, f"{unique_name}-none"], "cluster 'primary'")
        assert members == {unique_name: 1, f"{unique_name}-none": 0}
    finally:
        leave_group(member)


def test_a_child_that_dies_reading_offsets_is_client_died_naming_what_it_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=99))
    with pytest.raises(group_members.ClientDied) as caught:
        group_members.committed_offsets({"bootstrap.servers": "b:9092"}, ["g"], ["t"], "route r: source 'primary'")
    assert str(caught.value).startswith("route r: source 'primary': list consumer group offsets: the Kafka client "
                                        "died (signal 6): ")
    assert runs(tmp_path) == 2


def test_many_groups_offsets_are_their_own_partitions_filtered_to_those_asked(
        primary: Endpoint, unique_name: str, caplog: pytest.LogCaptureFixture) -> None:
    """A checkpoint asks each group once, naming no partition: every group's offsets on the partitions asked are
    found (as the read by partition finds them), none of another topic, none for a group that never committed."""
    from replicator.kafka.group_offsets import commit, committed_of_groups, read_committed

    topics = {f"{unique_name}-a": 3, f"{unique_name}-b": 2}
    create_topics(primary.bootstrap_servers, topics)
    groups = [f"g-{unique_name}-{n}" for n in range(20)]
    for n, group in enumerate(groups[:-1]):  # the last never commits
        commit(primary.properties, group, {(f"{unique_name}-a", n % 3): n + 1, (f"{unique_name}-b", 1): 7},
               "primary")
    asked = [(f"{unique_name}-a", p) for p in range(3)]  # the route's: not topic b
    found = committed_of_groups(primary.properties, groups, asked, "cluster 'primary'")
    assert list(found) == groups
    assert found == {group: read_committed(primary.properties, group, asked, "primary") for group in groups}
    assert found[groups[4]] == {(f"{unique_name}-a", 1): 5} and found[groups[-1]] == {}
    assert "partition by partition" not in caplog.text  # the child answered


def test_when_the_child_dies_the_groups_offsets_are_read_partition_by_partition(
        primary: Endpoint, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from replicator.kafka.group_offsets import commit, committed_of_groups

    create_topics(primary.bootstrap_servers, {unique_name: 2})
    commit(primary.properties, f"g-{unique_name}", {(unique_name, 1): 3}, "primary")
    monkeypatch.setattr(group_members, "CHILD", child(tmp_path, aborts=99))
    found = committed_of_groups(primary.properties, [f"g-{unique_name}", f"h-{unique_name}"],
                                [(unique_name, 0), (unique_name, 1)], "cluster 'primary'")
    assert found == {f"g-{unique_name}": {(unique_name, 1): 3}, f"h-{unique_name}": {}}
    assert runs(tmp_path) == 2
    assert "the groups' offsets are read partition by partition: cluster 'primary': list consumer group offsets: " \
           "the Kafka client died (signal 6)" in caplog.text
