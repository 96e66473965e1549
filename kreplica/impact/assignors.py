"""The Java consumer's partition assignors, bit for bit: Range, RoundRobin, Sticky and
CooperativeSticky as in kafka-clients 3.9 (``org.apache.kafka.clients.consumer``), for the
classic group protocol where the group leader runs the assignor.

Every step follows the Java code, including its ordering and tie-breaks: member order
(``MemberInfo``: static members by group.instance.id first, then member ids, both by
``String.compareTo``), the ``HashMap`` iteration orders the sticky assignors depend on (see
kreplica.impact.javacoll), the sticky assignors' two builders (all subscriptions equal or not),
generations and partitions claimed twice, and CooperativeSticky's holding back of partitions
that change owner until their owner revoked them. Not modelled: rack-aware assignment (KIP-881;
members here carry no client.rack) and the new consumer protocol (KIP-848), where the broker
assigns.

The subscriptions reach an assignor as a ``HashMap`` filled in the order of the group's
members (the JoinGroup response); that order only matters for HashMap collisions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kreplica.errors import InputError, KreplicaError
from kreplica.impact.javacoll import JavaHashMap, JavaHashSet, TopicPartition
from kreplica.kafka.javalang import java_sort_key

DEFAULT_GENERATION = -1
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
# partition.assignment.strategy class names -> our names
JAVA_CLASSES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


class AssignorError(KreplicaError):
    """The Java assignor throws here (e.g. IllegalStateException); the message is Java's."""

    code = "assignor-error"


@dataclass(frozen=True)
class GroupMember:
    """One member's subscription. `owned` None: no previous assignment (a new member);
    `generation` is the generation it owned them in (default 1 when `owned` is given)."""

    id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] | None = None
    generation: int | None = None
    instance: str | None = None  # group.instance.id of a static member

    @property
    def owned_generation(self) -> int:
        """The generation in the subscription (-1 = none, Java's Optional.empty)."""
        if self.owned is None:
            return DEFAULT_GENERATION
        return 1 if self.generation is None else self.generation


@dataclass(frozen=True)
class GroupSpec:
    members: tuple[GroupMember, ...]
    topics: Mapping[str, int] = field(default_factory=dict)  # partition counts

    def with_partitions(self, counts: Mapping[str, int]) -> GroupSpec:
        merged = dict(self.topics)
        merged.update(counts)
        return GroupSpec(self.members, merged)

    def after(self, assignment: Mapping[str, Sequence[TopicPartition]]) -> GroupSpec:
        """The group at its next rebalance: each member owns what `assignment` gave it."""
        members = tuple(
            GroupMember(
                m.id,
                m.topics,
                tuple(assignment.get(m.id, ())),
                (m.owned_generation if m.owned is not None else 0) + 1,
                m.instance,
            )
            for m in self.members
        )
        return GroupSpec(members, self.topics)


Assignment = dict[str, list[TopicPartition]]


def tp_text(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def parse_tp(text: str, where: str) -> TopicPartition:
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise InputError(f"{where}: {text!r} is not a topic-partition; write it like 'orders-3'")
    return topic, int(number)


def parse_group_document(doc: Any, origin: str = "group file") -> GroupSpec:
    """``{"members": [{"id": "C1", "topics": ["T1"], "owned": ["T1-0"]}], "topics": {"T1": 10}}``
    (`owned`, `generation`, `instance` optional)."""
    if not isinstance(doc, dict):
        raise InputError(f"{origin}: expected an object with 'members' and 'topics'")
    topics_doc = doc.get("topics", {})
    if not isinstance(topics_doc, dict):
        raise InputError(f"{origin}: 'topics' must map topic names to partition counts")
    topics: dict[str, int] = {}
    for name, count in topics_doc.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InputError(f"{origin}: topics.{name} must be a partition count (0 or more)")
        topics[str(name)] = count
    members_doc = doc.get("members")
    if not isinstance(members_doc, list) or not members_doc:
        raise InputError(f"{origin}: 'members' must be a non-empty list")
    members: list[GroupMember] = []
    seen: set[str] = set()
    claimed_instances: set[str] = set()
    for i, m in enumerate(members_doc):
        where = f"{origin}: members[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not m["id"]:
            raise InputError(f"{where} needs an 'id' (a string)")
        if m["id"] in seen:
            raise InputError(f"{where}: member id {m['id']!r} appears twice")
        seen.add(m["id"])
        subscribed = m.get("topics")
        if not isinstance(subscribed, list) or not all(isinstance(t, str) for t in subscribed):
            raise InputError(f"{where}.topics must be a list of topic names")
        if len(set(subscribed)) != len(subscribed):
            raise InputError(f"{where}.topics lists a topic twice")
        owned: tuple[TopicPartition, ...] | None = None
        if m.get("owned") is not None:
            if not isinstance(m["owned"], list) or not all(isinstance(x, str) for x in m["owned"]):
                raise InputError(f"{where}.owned must be a list like ['T1-0', 'T1-1']")
            owned = tuple(parse_tp(x, f"{where}.owned") for x in m["owned"])
            if len(set(owned)) != len(owned):
                raise InputError(f"{where}.owned lists a partition twice")
            for topic, number in owned:
                if topic in topics and number >= topics[topic]:
                    raise InputError(
                        f"{where}.owned: {topic}-{number} does not exist ({topic} has "
                        f"{topics[topic]} partitions)"
                    )
        generation = m.get("generation")
        if generation is not None and (not isinstance(generation, int) or generation < 0):
            raise InputError(f"{where}.generation must be a generation id (0 or more)")
        instance = m.get("instance")
        if instance is not None:
            if not isinstance(instance, str) or instance in claimed_instances:
                raise InputError(f"{where}.instance must be a unique group.instance.id")
            claimed_instances.add(instance)
        members.append(GroupMember(m["id"], tuple(subscribed), owned, generation, instance))
    return GroupSpec(tuple(members), topics)


def assign(assignor: str, group: GroupSpec) -> Assignment:
    """member id -> its partitions, in the order the Java assignor lists them."""
    run: dict[str, Callable[[GroupSpec], Assignment]] = {
        "range": _range,
        "roundrobin": _round_robin,
        "sticky": lambda g: _Sticky(g, cooperative=False).run(),
        "cooperative-sticky": lambda g: _Sticky(g, cooperative=True).run(),
    }
    if assignor not in run:
        raise InputError(f"unknown assignor {assignor!r}; use one of {', '.join(ASSIGNORS)}")
    return run[assignor](group)


# --- shared steps (AbstractPartitionAssignor) ------------------------------------------------


def _subscriptions(group: GroupSpec) -> list[GroupMember]:
    """The leader's ``HashMap<String, Subscription>``, in its iteration order."""
    by_id = {m.id: m for m in group.members}
    table: JavaHashMap[str, int] = JavaHashMap()
    for m in group.members:
        table.put(m.id, 0)
    return [by_id[k] for k in table]


def _partitions_per_topic(group: GroupSpec, members: list[GroupMember]) -> list[tuple[str, int]]:
    """``AbstractPartitionAssignor.assign(Cluster, ...)``: subscribed topics that exist with
    partitions, as a HashMap filled in the order of a HashSet of the subscribed topics."""
    subscribed: JavaHashSet[str] = JavaHashSet()
    for m in members:
        for topic in m.topics:
            subscribed.add(topic)
    table: JavaHashMap[str, int] = JavaHashMap()
    for topic in subscribed:
        count = group.topics.get(topic, 0)
        if count > 0:
            table.put(topic, count)
    return table.items()


def _member_key(m: GroupMember) -> tuple[int, bytes]:
    """``MemberInfo.compareTo``: static members (by instance id) before dynamic (by id)."""
    if m.instance is not None:
        return 0, java_sort_key(m.instance)
    return 1, java_sort_key(m.id)


def _range(group: GroupSpec) -> Assignment:
    members = _subscriptions(group)
    result: Assignment = {m.id: [] for m in members}
    for topic, count in _partitions_per_topic(group, members):
        consumers = sorted((m for m in members if topic in m.topics), key=_member_key)
        if not consumers:
            continue
        per, extra = divmod(count, len(consumers))
        start = 0
        for m in consumers:
            if start >= count:
                break
            take = per + (1 if extra > 0 else 0)
            if take <= 0:
                continue
            result[m.id].extend((topic, p) for p in range(start, start + take))
            start += take
            if take > per:
                extra -= 1
    return result


def _round_robin(group: GroupSpec) -> Assignment:
    members = _subscriptions(group)
    result: Assignment = {m.id: [] for m in members}
    ring = sorted(members, key=_member_key)
    topics = sorted({t for m in members for t in m.topics}, key=java_sort_key)
    at = 0
    for topic in topics:
        for p in range(group.topics.get(topic, 0)):
            while topic not in ring[at].topics:
                at = (at + 1) % len(ring)
            result[ring[at].id].append((topic, p))
            at = (at + 1) % len(ring)
    return result


# --- AbstractStickyAssignor ------------------------------------------------------------------


class _Movements:
    """``AbstractStickyAssignor.PartitionMovements`` (the parts that steer the result)."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet[TopicPartition]]] = {}
        self.moves: dict[TopicPartition, tuple[str, str]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            src, _dst = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def actual_partition(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


class _SortedSubscriptions:
    """The TreeSet ordered by (assigned partitions, member id); an element's key is fixed
    while it is in the set (the Java code removes it before changing its assignment)."""

    def __init__(self, current: dict[str, list[TopicPartition]]) -> None:
        self.current = current
        self.items: list[tuple[int, bytes, str]] = []

    def _key(self, c: str) -> tuple[int, bytes, str]:
        return len(self.current[c]), java_sort_key(c), c

    def add(self, c: str) -> None:
        import bisect

        bisect.insort(self.items, self._key(c))

    def remove(self, c: str) -> None:
        for i, item in enumerate(self.items):
            if item[2] == c:
                del self.items[i]
                return

    def __iter__(self) -> Any:
        return iter([item[2] for item in self.items])

    def first(self) -> str:
        return self.items[0][2]

    def last(self) -> str:
        return self.items[-1][2]


class _Sticky:
    def __init__(self, group: GroupSpec, *, cooperative: bool) -> None:
        self.group = group
        self.cooperative = cooperative
        self.members = _subscriptions(group)
        self.by_id = {m.id: m for m in self.members}
        self.partitions_per_topic = dict(_partitions_per_topic(group, self.members))
        self.max_generation = DEFAULT_GENERATION
        self.transferring: dict[TopicPartition, str] | None = None

    def member_data(self, m: GroupMember) -> tuple[list[TopicPartition], int | None]:
        if m.owned is None:
            return [], None
        if self.cooperative:
            return list(m.owned), m.owned_generation
        # StickyAssignor's user data: the previous assignment grouped by topic through a
        # HashMap (CollectionUtils.groupPartitionsByTopic), then read back topic by topic.
        grouped: JavaHashMap[str, list[int]] = JavaHashMap()
        for topic, p in m.owned:
            grouped.compute_if_absent(topic, list).append(p)
        return [(t, p) for t, ps in grouped.items() for p in ps], m.owned_generation

    def run(self) -> Assignment:
        try:
            return self.assign()
        except KeyError as exc:
            # the Java code reads a map entry that is not there (e.g. a previous owner that
            # cannot take part in the reassignment): NullPointerException
            raise AssignorError(
                f"the Java assignor fails on this group (NullPointerException at {exc})"
            ) from None

    def assign(self) -> Assignment:
        owned_by: JavaHashMap[str, list[TopicPartition]] = JavaHashMap()
        doubly: set[TopicPartition] = set()
        if self._all_subscriptions_equal(owned_by, doubly):
            self.transferring = {}
            result = self._constrained(owned_by, doubly)
        else:
            result = self._general(owned_by)
        if self.cooperative:
            moving = self.transferring
            if moving is None:
                moving = self._transferring(result)
            for tp, consumer in moving.items():
                if tp in result[consumer]:
                    result[consumer].remove(tp)
        return result

    def _all_subscriptions_equal(
        self, owned_by: JavaHashMap[str, list[TopicPartition]], doubly: set[TopicPartition]
    ) -> bool:
        equal = True
        subscribed: set[str] = set()
        previous_owner: dict[TopicPartition, str] = {}
        for m in self.members:
            if not subscribed:
                subscribed.update(m.topics)
            elif equal and not (len(m.topics) == len(subscribed) and subscribed >= set(m.topics)):
                equal = False
            partitions, generation = self.member_data(m)
            member_generation = DEFAULT_GENERATION if generation is None else generation
            self.max_generation = max(self.max_generation, member_generation)
            owned: list[TopicPartition] = []
            owned_by.put(m.id, owned)
            for tp in partitions:
                if tp[0] not in self.partitions_per_topic:
                    continue
                other = previous_owner.get(tp)
                if other is None:
                    owned.append(tp)
                    previous_owner[tp] = m.id
                    continue
                other_generation = self.by_id[other].owned_generation
                if member_generation == other_generation:
                    doubly.add(tp)
                    _remove_first(owned_by[other], tp)
                    previous_owner[tp] = m.id
                elif member_generation > other_generation:
                    owned.append(tp)
                    _remove_first(owned_by[other], tp)
                    previous_owner[tp] = m.id
        return equal

    def _transferring(self, result: Assignment) -> dict[TopicPartition, str]:
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for consumer, assigned in result.items():
            owned = list(self.by_id[consumer].owned or ())
            owned_set = set(owned)
            for tp in assigned:
                if tp not in owned_set:
                    added[tp] = consumer
            assigned_set = set(assigned)
            revoked.update(tp for tp in owned if tp not in assigned_set)
        return {tp: c for tp, c in added.items() if tp in revoked}

    # ConstrainedAssignmentBuilder: every member subscribes to the same topics
    def _constrained(
        self, owned_by: JavaHashMap[str, list[TopicPartition]], doubly: set[TopicPartition]
    ) -> Assignment:
        total = sum(self.partitions_per_topic.values())
        n = len(owned_by)
        min_quota = total // n
        max_quota = math.ceil(total / n)
        expected_over = total % n
        over = 0
        assignment: Assignment = {c: [] for c in owned_by}
        assigned: list[TopicPartition] = []
        maybe_revoked: dict[TopicPartition, str] = {}
        under: list[str] = []
        exact: list[str] = []
        for consumer, owned_list in owned_by.items():
            owned = sorted(owned_list, key=lambda tp: (tp[1], java_sort_key(tp[0])))
            for tp in doubly:
                if tp in owned:
                    owned.remove(tp)
            mine = assignment[consumer]
            if len(owned) < min_quota:
                mine.extend(owned)
                assigned.extend(owned)
                under.append(consumer)
            elif len(owned) >= max_quota and over < expected_over:
                over += 1
                if over == expected_over:
                    exact.clear()
                mine.extend(owned[:max_quota])
                assigned.extend(owned[:max_quota])
                for tp in owned[max_quota:]:
                    maybe_revoked[tp] = consumer
            else:
                mine.extend(owned[:min_quota])
                assigned.extend(owned[:min_quota])
                for tp in owned[min_quota:]:
                    maybe_revoked[tp] = consumer
                if over < expected_over:
                    exact.append(consumer)
        unassigned = self._constrained_unassigned(assigned)
        under.sort(key=java_sort_key)
        exact.sort(key=java_sort_key)
        transferring = self.transferring if self.transferring is not None else {}

        def give(tp: TopicPartition, consumer: str) -> int:
            assignment[consumer].append(tp)
            if (tp in maybe_revoked and maybe_revoked[tp] != consumer) or tp in doubly:
                transferring[tp] = consumer
            return len(assignment[consumer])

        at = 0  # the LinkedList iterator over `under`: index of its next element
        for tp in unassigned:
            if at < len(under):
                consumer = under[at]
                at += 1
            elif not under and not exact:
                raise AssignorError("No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exact.pop(0)
            else:
                at = 1
                consumer = under[0]
            count = give(tp, consumer)
            if count == min_quota:
                at -= 1
                del under[at]
                exact.append(consumer)
            elif count == max_quota:
                over += 1
        if under:
            if over != expected_over:
                raise AssignorError(
                    "We haven't reached the expected number of members with more than the "
                    "minQuota partitions, but no more partitions to be assigned"
                )
            for member in under:
                if len(assignment[member]) != min_quota:
                    raise AssignorError(
                        f"Consumer: [{member}] doesn't reach minQuota partitions, and no more "
                        "partitions to be assigned"
                    )
        return assignment

    def _constrained_unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        topics = sorted(self.partitions_per_topic, key=java_sort_key)
        everything = [(t, p) for t in topics for p in range(self.partitions_per_topic[t])]
        if not assigned:
            return everything
        order = sorted(assigned, key=lambda tp: (java_sort_key(tp[0]), tp[1]))
        return _walk_unassigned(everything, order)

    # GeneralAssignmentBuilder
    def _general(self, owned_by: JavaHashMap[str, list[TopicPartition]]) -> Assignment:
        per_topic = self.partitions_per_topic
        current: dict[str, list[TopicPartition]] = dict(owned_by.items())
        topic_consumers: dict[str, list[str]] = {t: [] for t in per_topic}
        consumer_topics: dict[str, list[str]] = {}
        for m in self.members:
            mine = [t for t in m.topics if t in per_topic]
            consumer_topics[m.id] = mine
            for t in mine:
                topic_consumers[t].append(m.id)
            current.setdefault(m.id, [])
        owner: dict[TopicPartition, str] = {tp: c for c, lst in current.items() for tp in lst}
        sorted_topics = sorted(
            topic_consumers, key=lambda t: (len(topic_consumers[t]), java_sort_key(t))
        )
        all_partitions = [(t, p) for t in sorted_topics for p in range(per_topic[t])]
        subs = _SortedSubscriptions(current)
        total = sum(per_topic.values())

        # prepopulateCurrentAssignments
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for m in self.members:
            partitions, generation = self.member_data(m)
            if generation is not None and generation < self.max_generation:
                gen = generation
            elif generation is None and self.max_generation > DEFAULT_GENERATION:
                gen = DEFAULT_GENERATION
            else:
                continue
            for tp in partitions:
                if tp not in previous or gen > previous[tp][1]:
                    previous[tp] = (m.id, gen)

        # assignOwnedPartitions
        assigned: list[TopicPartition] = []
        revocation_required = False
        for consumer, lst in current.items():
            subscription = self.by_id[consumer].topics
            kept: list[TopicPartition] = []
            for tp in lst:
                if tp[0] not in topic_consumers:
                    owner.pop(tp, None)
                elif tp[0] not in subscription:
                    revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            lst[:] = kept
        if assigned:
            order = sorted(
                assigned, key=lambda tp: (len(topic_consumers[tp[0]]), java_sort_key(tp[0]), tp[1])
            )
            unassigned = _walk_unassigned(all_partitions, order)
        else:
            unassigned = all_partitions  # the same list object, as in Java
        for c in current:
            subs.add(c)

        def max_size(consumer: str) -> int:
            mine = consumer_topics[consumer]
            if len(mine) == len(per_topic):
                return total
            return sum(per_topic[t] for t in mine)

        movements = _Movements()

        def process(tp: TopicPartition, new: str) -> None:
            old = owner[tp]
            subs.remove(old)
            subs.remove(new)
            movements.move(tp, old, new)
            _remove_first(current[old], tp)
            current[new].append(tp)
            owner[tp] = new
            subs.add(new)
            subs.add(old)

        def reassign(tp: TopicPartition, new: str | None = None) -> None:
            if new is None:
                new = next(c for c in subs if tp[0] in consumer_topics[c])
            moved = movements.actual_partition(tp, owner[tp], new)
            process(moved, new)

        def balanced() -> bool:
            if len(current[subs.first()]) >= len(current[subs.last()]) - 1:
                return True
            sizes = {c: len(lst) for c, lst in current.items()}
            for consumer in subs:
                size = sizes[consumer]
                if size == max_size(consumer):
                    continue
                mine = set(current[consumer])
                for t in consumer_topics[consumer]:
                    for p in range(per_topic[t]):
                        if (t, p) not in mine and size + 1 < sizes[owner[(t, p)]]:
                            return False
            return True

        def perform(partitions: list[TopicPartition]) -> bool:
            performed = False
            while True:
                modified = False
                for tp in partitions:
                    if balanced():
                        break
                    consumer = owner[tp]
                    prior = previous.get(tp)
                    if prior is not None and len(current[consumer]) > len(current[prior[0]]) + 1:
                        reassign(tp, prior[0])
                        performed = modified = True
                        continue
                    for other in topic_consumers[tp[0]]:
                        if len(current[consumer]) > len(current[other]) + 1:
                            reassign(tp)
                            performed = modified = True
                            break
                if not modified:
                    return performed

        # balance
        initializing = not current[subs.last()]
        for tp in unassigned:  # maybeAssign
            if not topic_consumers[tp[0]]:
                continue
            for c in subs:
                if tp[0] in consumer_topics[c]:
                    subs.remove(c)
                    current[c].append(tp)
                    owner[tp] = c
                    subs.add(c)
                    break
        fixed_partitions = {
            (t, p) for t, cs in topic_consumers.items() if len(cs) < 2 for p in range(per_topic[t])
        }
        all_partitions[:] = [tp for tp in all_partitions if tp not in fixed_partitions]
        unassigned[:] = [tp for tp in unassigned if tp not in fixed_partitions]
        fixed: dict[str, list[TopicPartition]] = {}
        for consumer in consumer_topics:
            lst = current[consumer]
            can = len(lst) < max_size(consumer) or any(
                len(topic_consumers[tp[0]]) >= 2 for tp in lst
            )
            if not can:
                subs.remove(consumer)
                fixed[consumer] = current.pop(consumer)
        before = {c: list(lst) for c, lst in current.items()}
        before_owner = dict(owner)
        if not revocation_required:
            perform(unassigned)
        performed = perform(all_partitions)
        if not initializing and performed and _score(current) >= _score(before):
            current.clear()
            current.update(before)
            owner = before_owner
        current.update(fixed)
        return {m.id: current[m.id] for m in self.members}


def _remove_first(items: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in items:
        items.remove(tp)


def _walk_unassigned(
    everything: list[TopicPartition], sorted_assigned: list[TopicPartition]
) -> list[TopicPartition]:
    """Both builders' getUnassignedPartitions: one pass over all partitions with a cursor in
    the sorted assigned ones."""
    result: list[TopicPartition] = []
    cursor = iter(sorted_assigned)
    next_assigned = next(cursor)
    direct = False
    for tp in everything:
        if direct or next_assigned != tp:
            result.append(tp)
        else:
            following = next(cursor, None)
            if following is None:
                direct = True
            else:
                next_assigned = following
    return result


def _score(assignment: Mapping[str, Sequence[TopicPartition]]) -> int:
    sizes = [len(v) for v in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])


# --- comparing two assignments -----------------------------------------------------------------


def owners(assignment: Mapping[str, Iterable[TopicPartition]]) -> dict[TopicPartition, str]:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def compare(
    before: Mapping[str, Sequence[TopicPartition]], after: Mapping[str, Sequence[TopicPartition]]
) -> dict[str, Any]:
    """Partitions that change owner (existing ones) or are new, and members above their share
    (more than ceil(partitions / members) afterwards)."""
    old = owners(before)
    new = owners(after)
    moved = sorted(
        (tp for tp, member in new.items() if tp in old and old[tp] != member),
        key=lambda tp: (java_sort_key(tp[0]), tp[1]),
    )
    added = sorted(
        (tp for tp in new if tp not in old), key=lambda tp: (java_sort_key(tp[0]), tp[1])
    )
    unassigned = sorted(
        (tp for tp in old if tp not in new), key=lambda tp: (java_sort_key(tp[0]), tp[1])
    )
    total = len(new)
    members = len(after) or 1
    share = math.ceil(total / members)
    above = {m: len(tps) for m, tps in after.items() if len(tps) > share}
    return {
        "changed_owner": [tp_text(tp) for tp in moved],
        "newly_assigned": [tp_text(tp) for tp in added],
        "no_longer_assigned": [tp_text(tp) for tp in unassigned],
        "fair_share": share,
        "above_share": above,
    }


def assignment_json(assignment: Mapping[str, Sequence[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [tp_text(tp) for tp in tps] for m, tps in assignment.items()}
