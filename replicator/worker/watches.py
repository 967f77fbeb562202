"""A route worker's watches over its own health, run by the copy loop: the source out of reach (copying held
until the worker joins anew), partitions stuck though the source has records for them, placing that keeps
failing while the source answers others, and the lag gauges of what it owns."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.domain.naming import group_id
from replicator.domain.partition_state import Facts, PartitionState, state_of
from replicator.domain.stuck import Moving, Remedy, Stuck
from replicator.domain.withheld import GroupSays, KeptWatch, ReleaseWatch, WithheldWatch
from replicator.kafka import pausing
from replicator.logs import listed
from replicator.worker import metrics
from replicator.worker.placing import Placing
from replicator.worker.records import TP
from replicator.worker.subscription import Membership

if TYPE_CHECKING:
    from replicator.domain.outage import OutageWatch

log = logging.getLogger(__name__)

# The group not knowing this worker's member while its client hands it partitions, on two looks this far apart: the
# member's session ran out unheard (see ``_watch_unknown``).
UNKNOWN_AFTER_S = 5.0
# Every partition the worker owns with records past a fetch position that has stood for ``timeouts.client_still`` s
# (``stuck_after``, if shorter): its client no longer fetches (librdkafka #5153). One partition counts too: for it,
# new clients cure what a re-seek would, and a deaf client could not re-seek (join-eos-29: a worker owning one
# partition waited 120 s for the re-seek, then a minute of placing that failed, before new clients).
LAG_SLICE = 250  # partitions whose lag gauge one loop turn updates (``_publish_lag``)
STILL_MIN_S = 2.0  # a process standing still less long is a busy machine's scheduling, not a freeze


class Watches(Placing):
    """RouteWorker's base: the watches its loop runs. The attributes below are the worker's (set in its
    ``__init__``), beside Placing's and GroupMember's."""

    outage: OutageWatch
    holding: str | None  # why copying is held until the worker joins the group anew
    _lag_at: float
    _lag_pending: list[TP]  # the partitions the lag gauges' pass under way has still to see
    _lag_counts: dict[PartitionState, int]  # that pass's partitions by state so far
    _ends: dict[TP, int]  # each owned partition's readable end, as the last topic refresh that could read it saw
    _ends_at: float  # when the next look reads them
    _assignment_at: float  # when the next look asks the group what it gave this worker
    _asking_often_until: float  # until then it asks every ``timeouts.assignment_soon`` s (see ``_assignment_changed``)
    withheld_watch: WithheldWatch
    release_watch: ReleaseWatch
    kept_watch: KeptWatch
    _withheld_member: Membership | None  # the member the withheld watch watches
    _unknown_since: tuple[Membership, float] | None  # a member the group did not know, since when

    def _watch_outage(self) -> None:
        """The source out of reach for ``outage_hold`` s: the group may have given this worker's partitions to
        others (see domain.outage). Everything assigned is paused at once -- a local call: when the link comes
        back nothing is fetched for partitions that may be another's -- nothing is placed or copied, and the
        worker joins the group anew once the source answers (``_source_answers``)."""
        if self.holding or self._consumer is None:
            return
        out = self.outage.due(time.monotonic())
        if out is not None:
            self._hold(f"the source was out of reach for {out:.0f} s")

    def _woke(self, stood: float) -> bool:
        """The whole process stood still for ``stood`` s (frozen, suspended; see ``stall.LoopWatch``): as long as
        ``outage.hold_after``, the group may have given its partitions to others meanwhile, and on waking
        librdkafka fetches them before the answer to its next heartbeat says so (a worker frozen 17.6 s copied
        395 records of a partition again in the fault harness). Held like a worker cut off that long; True then:
        what the source returned meanwhile may be another's."""
        if stood < max(self.outage.hold_after, STILL_MIN_S) or self._consumer is None:
            return False
        if not self.holding:
            self._hold(f"the worker's process stood still for {stood:.0f} s (frozen or suspended)")
        return True

    def _hold(self, reason: str) -> None:
        """Pause everything assigned and join the group anew once the source answers (``_source_answers``)."""
        self.holding = reason
        try:
            assigned = self.consumer.assignment()
            if assigned:
                pausing.pause(self.consumer, assigned)
        except KafkaException as exc:  # a consumer in a fatal state: its renewal below replaces it anyway
            assigned = []
            log.warning("pausing for the hold failed route=%s error=%s", self.route.name, exc.args[0].str())
        self.subscription.force_refresh()  # its look tells when the source answers again
        log.warning("copying held: %s, the group may have given this worker's partitions to others; it joins the "
                    "group anew once the source answers route=%s partitions=%d", reason, self.route.name,
                    len(assigned))

    def _source_answers(self) -> None:
        """A look at its topics came from the source: it answers now (records may have been fetched before it
        went away, so they do not say so). A held worker joins anew: a new consumer, which copies what the
        group gives it from the committed positions."""
        self.links.up("source")
        self.outage.answers(time.monotonic())
        if self.holding:
            reason, self.holding = self.holding, None
            self._reach_coordinator()
            self._renew_clients(f"{reason}: joining the group anew before copying again")

    def _ends_wanted(self) -> list[TP] | None:
        """What the look about to start reads the ends of: every partition owned (or being placed), once every
        ``timeouts.lag`` s (counted from a look that had any); None in between."""
        now = time.monotonic()
        if now < self._ends_at:
            return None
        owned = sorted(set(self.inflight.ledgers) | self.unplaced)
        if owned:
            self._ends_at = now + self.timeouts.lag
        return owned

    def _member_wanted(self) -> Membership | None:
        """This worker's member when the look about to start should ask the group what it gave it: once every
        ``timeouts.assignment`` s, sooner while partitions are seen withheld; None in between."""
        now = time.monotonic()
        if now < self._assignment_at:
            return None
        member = None if self.holding or self.renewing else self._membership()
        if member is not None:
            self._assignment_at = now + self._asking_every(now)
        return member

    def _asking_every(self, now: float) -> float:
        every = self.timeouts.assignment
        return min(every, self.timeouts.assignment_soon) if now < self._asking_often_until else every

    def _assignment_changed(self) -> None:
        """This worker's assignment changed (a rebalance, new clients): the group is asked what it gave it every
        ``timeouts.assignment_soon`` s for ``timeouts.assignment`` s, the time withheld partitions came in."""
        now = time.monotonic()
        self._asking_often_until = now + self.timeouts.assignment
        self._assignment_at = min(self._assignment_at, now + self._asking_every(now))

    def _membership(self) -> Membership | None:
        """This worker's member in the route's group on the source (None: not a member now)."""
        member = self._member_id_of(self._consumer)
        return None if member is None else Membership(self.route.source, group_id(self.route), member)

    @staticmethod
    def _member_id_of(client: Consumer | None) -> str | None:
        if client is None:
            return None
        try:
            return client.memberid() or None
        except RuntimeError:  # closed meanwhile
            return None

    def _handed_over(self) -> set[TP]:
        """The partitions of the group the client handed to the worker (owned or being placed)."""
        return set(self.inflight.ledgers) | self.unplaced

    def _watch_membership(self, group: tuple[Membership, GroupSays] | None, unknown: Membership | None) -> None:
        """What a look read of the group: what it says of this worker's member, or that it does not know it."""
        if group is not None:
            self._unknown_since = None
            self._watch_withheld(*group)
        elif unknown is not None:
            self._watch_unknown(unknown)

    def _watch_unknown(self, member: Membership) -> None:
        """The group does not know this worker's member, while its client still hands the worker partitions: the
        member's session ran out and the client never heard of it. Seen after a clean restart of a one-node source
        (the long fault run, seed 444): one worker's consumer reported nothing of the outage and reached neither
        the restarted coordinator nor the partitions' leader; the group gave its partitions to the others when its
        session timed out, and the worker stayed silent, copying nothing, until it was restarted 33 s later.
        Seen on two looks ``UNKNOWN_AFTER_S`` apart, new clients join anew (the id is free: the session that held
        it ran out)."""
        if self.holding or self.renewing or member != self._membership():
            return
        handed, now = self._handed_over(), time.monotonic()
        if not handed:
            self._unknown_since = None
            return
        if self._unknown_since is None or self._unknown_since[0] != member:
            self._unknown_since = (member, now)
        since = self._unknown_since[1]
        if now - since < UNKNOWN_AFTER_S:
            self._assignment_at = min(self._assignment_at, since + UNKNOWN_AFTER_S)  # asked again then
            return
        self._unknown_since = None
        metrics.STUCK.labels(self.route.name, Remedy.REJOIN.value).inc()
        self._renew_clients(f"group {member.group} no longer knows this worker's member (its session ran out "
                            f"unheard), though its client still hands it {len(handed)} partitions")

    def _watch_withheld(self, member: Membership, said: GroupSays) -> None:
        """Partitions the group gave this worker that its client has not handed over for a while, or that another
        member has waited for a while, which this worker's client revoked or was never told to give up (see
        ``domain.withheld``): new clients, which take the assignment up afresh or tell the coordinator afresh what
        they own."""
        if self.holding or self.renewing or member != self._membership():
            return  # a look that asked for the client before this one
        if member != self._withheld_member:
            self._withheld_member = member
            self.withheld_watch.forget()
            self.kept_watch.forget()
        now = time.monotonic()
        handed_over = self._handed_over()
        unreleased = self.release_watch.observe(member.member, said.awaited_by_others, said.held_by_others, now)
        kept = self.kept_watch.observe(said.awaited_by_others, handed_over, now)
        overdue = self.withheld_watch.observe(said.given, said.held_by_others, handed_over, now)
        for watch in (self.kept_watch, self.withheld_watch):
            if watch.watching:  # seen: asked again once it would be due
                self._assignment_at = min(self._assignment_at, now + watch.after)
        if unreleased:
            reason = (f"group {member.group} still counts {listed(f'{t}[{p}]' for t, p in unreleased)} as this "
                      f"worker's, revoked {self.release_watch.after:.0f} s ago, and another member waits for them")
        elif kept:
            reason = (f"group {member.group} took {listed(f'{t}[{p}]' for t, p in kept)} back for another member "
                      f"{self.kept_watch.after:.0f} s ago, but this worker's client was never told to give them up")
        elif overdue:
            reason = (f"group {member.group} gave this worker {listed(f'{t}[{p}]' for t, p in overdue)} but its "
                      f"client did not hand them over for {self.withheld_watch.after:.0f} s")
        else:
            return
        metrics.STUCK.labels(self.route.name, Remedy.REJOIN.value).inc()
        self.withheld_watch.forget()
        self.kept_watch.forget()
        self._renew_clients(reason)

    def _released(self, partitions: list[TopicPartition]) -> None:
        """This worker's client revoked ``partitions`` of its group (see ``_watch_withheld``). Not watched when the
        revocation comes from a close (the member leaves, or its session runs out): there librdkafka's ``memberid``
        waits for the group's thread, which waits for the close, and confluent-kafka holds the GIL meanwhile -- the
        whole worker hung for good (seen in CI, a consumer renewed after a source restart)."""
        if self.closing:
            return
        member = self._membership()
        if member is not None and partitions:
            now = time.monotonic()
            self.release_watch.released(member.member, [(tp.topic, tp.partition) for tp in partitions], now)
            self._assignment_at = min(self._assignment_at, now + self.release_watch.after)  # asked when it is due

    def _watch_stuck(self, ends: dict[TP, int]) -> None:
        """Owned partitions the source has records for past their fetch position, which has not moved for
        ``stuck_after`` s though nothing holds them (see domain.stuck): placed again, or given back."""
        # Every owned partition is looked at: one whose end this look could not read (a source away) is watched
        # afresh, or a source back after minutes would find every partition "stuck" since before it went.
        self._ends.update(ends)  # the lag gauges' ends (kept while the source does not answer)
        owned = sorted(self.inflight.ledgers)
        if not owned or self._consumer is None:
            return
        known = {key: position for key in owned
                 if (position := self.stuck_watch.known_position(key, ends.get(key))) is not None}
        asked = [TopicPartition(*key) for key in owned if key not in known]
        positions = [*(TopicPartition(t, p, offset) for (t, p), offset in known.items()),
                     *(self.consumer.position(asked) if asked else [])]
        now, reseek, rejoin = time.monotonic(), set(), []
        client_wait = min(self.stuck_watch.after, self.timeouts.client_still)
        for tp in positions:
            key = (tp.topic, tp.partition)
            may_fetch = not (self.paused or self.failure or self.holding or key in self.unplaced or key in self.resets
                             or self._kept_from_fetching(key) or self._fetch_held())
            event = self.stuck_watch.observe(key, tp.offset if tp.offset >= 0 else None, ends.get(key), may_fetch,
                                             now)
            if isinstance(event, Moving):
                log.warning("stuck partition fetches again route=%s topic=%s partition=%d position=%d",
                            self.route.name, key[0], key[1], event.position)
                self.subscription.state.partition_state(key[0], key[1], None)
            elif isinstance(event, Stuck):
                self.subscription.state.partition_state(
                    key[0], key[1], PartitionState.STUCK.value,
                    f"fetch position {event.position} still for {event.seconds:.0f} s while the source's end is "
                    f"{event.end}: {event.remedy.value}")
                log.warning("partition stuck: the source has records past its fetch position, which has not moved "
                            "for %.0f s; %s route=%s topic=%s partition=%d position=%d end=%d", event.seconds,
                            "placing it again from its committed offset" if event.remedy == Remedy.RESEEK
                            else "stuck again after a re-seek: giving it back to the group (a new consumer)",
                            self.route.name, key[0], key[1], event.position, event.end)
                metrics.STUCK.labels(self.route.name, event.remedy.value).inc()
                (reseek.add(key) if event.remedy == Remedy.RESEEK else rejoin.append(key))
        metrics.STUCK_NOW.labels(self.route.name).set(len(self.stuck_watch.stuck()))
        if rejoin:
            self._renew_clients(f"partitions stuck after a re-seek: {', '.join(f'{t}[{p}]' for t, p in rejoin)}")
        elif all(
                (still := self.stuck_watch.still_for(key, now)) is not None and still >= client_wait for key in owned):
            # Every partition it owns stuck at once: the client stopped fetching, not a partition (librdkafka
            # #5153 after a source restart). A re-seek would not cure it (the exactly-once fault run, seed 264:
            # 126 s stuck, 63 s placing, a 20 s close).
            metrics.STUCK.labels(self.route.name, Remedy.REJOIN.value).inc()
            self._renew_clients(f"every partition it owns ({len(owned)}) stuck at once for {client_wait:.0f} s: the "
                                f"client no longer fetches")
        elif reseek:
            self._start_over(reseek, "partitions stuck: placing them again from the committed positions")

    def _fetch_held(self) -> bool:
        """The worker itself takes no records now (an exactly-once worker's due commit): nothing can be stuck."""
        return False

    def _forget(self, keys: set[TP]) -> None:
        super()._forget(keys)
        for key in keys:  # an end read before it went would say too little when it comes back
            self._ends.pop(key, None)
        # Placed again, a partition resumes where it stood: without this, the client rule would find it standing
        # since before new clients took it, and renew them again at once.
        self.stuck_watch.recount(keys)

    def _publish_lag(self) -> None:
        """Every few seconds, each owned partition's lag: its readable end, as the last topic refresh read it
        from the source (one ListOffsets, off the loop), minus where the route resumes.

        Not librdkafka's cached watermarks: a stuck partition's stay put while its lag grows, and each is found
        by a walk of librdkafka's topics under a lock its other threads hold for long at thousands of topics
        (one call took 0.4 s; 2,000 of them held the loop up to 0.7 s, bench/scale.py). Not its statistics
        either: their JSON, parsed on the loop, took a quarter of a second at 2,000 partitions. LAG_SLICE
        partitions a turn; the states' counts are published once every partition was seen."""
        if not self._lag_pending:
            now = time.monotonic()
            if now < self._lag_at:
                return
            self._lag_at = now + self.timeouts.lag
            self._lag_pending = sorted(self.inflight.ledgers, reverse=True)  # popped from the end: in order
            self._lag_counts = dict.fromkeys(PartitionState, 0)
        stuck = set(self.stuck_watch.stuck())
        for _ in range(min(LAG_SLICE, len(self._lag_pending))):
            topic, partition = key = self._lag_pending.pop()
            ledger = self.inflight.ledgers.get(key)
            if ledger is None:
                continue  # revoked since the pass began
            position, end = ledger.resume_from(), self._ends.get(key)
            lag = max(0, end - position) if position is not None and end is not None else None
            if lag is not None:
                metrics.LAG.labels(self.route.name, topic, str(partition)).set(lag)
            recorded = (PartitionState.STUCK, "") if key in stuck else None
            self._lag_counts[state_of(Facts(lag, position, None, recorded, topic in self.paused_topics))[0]] += 1
        if not self._lag_pending:
            for state, count in self._lag_counts.items():  # the states a worker can know of itself (status adds
                metrics.STATES.labels(self.route.name, state.value).set(count)  # the others)
