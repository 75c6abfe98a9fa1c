"""Which partition of ``__transaction_state`` / ``__consumer_offsets`` holds a transactional id or a group.

The coordinators place a key with the rule of Kafka's ``TransactionStateManager.partitionFor``
and ``GroupMetadataManager.partitionFor``::

    Utils.abs(id.hashCode()) % partitionCount        # Utils.abs(Integer.MIN_VALUE) == 0

where ``hashCode`` is Java's ``String.hashCode`` (``s[0]*31^(n-1) + ... + s[n-1]`` over the
UTF-16 code units, in 32-bit two's complement) and the partition counts default to 50
(``transaction.state.log.num.partitions``, ``offsets.topic.num.partitions``).  Knowing the
partition tells a user which directory to collect.
"""

from __future__ import annotations

from kafkadump.base.values import FrozenValue

DEFAULT_PARTITIONS = 50   # transaction.state.log.num.partitions and offsets.topic.num.partitions
INT32_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` (a signed 32-bit int)."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The partition of the coordinator topic holding ``key`` (a transactional id or a group id)."""
    if partitions < 1:
        raise ValueError("the coordinator topic has at least one partition")
    h = java_string_hash(key)
    return (0 if h == INT32_MIN else abs(h)) % partitions


class IdLookup(FrozenValue):
    """Where a transactional id or a group id lives, and whether that partition was read."""

    __match_args__ = ("key", "partition", "on_disk", "known")

    key: str
    partition: int
    on_disk: bool        # that coordinator partition was among the inputs
    known: bool          # a record of this id was found there

    def __init__(self, key: str, partition: int, on_disk: bool, known: bool) -> None:
        self._set(key=key, partition=partition, on_disk=on_disk, known=known)


def placement_note(topic: str, option: str, found: dict[str, int], partitions: int) -> str | None:
    """A note when ids (``found``: id -> the ``topic`` partition its records were read from) sit where
    ``partitions`` does not place them: the cluster's partition count is another, the smallest that places
    them all named when there is one (at most 1000)."""
    wrong = sorted(k for k, part in found.items() if coordinator_partition(k, partitions) != part)
    if not wrong:
        return None
    least = max(found.values()) + 1
    fits = next((n for n in range(least, 1001)
                 if all(coordinator_partition(k, n) == part for k, part in found.items())), None)
    key = wrong[0]
    hint = f"; {fits} partitions place every one where it is" if fits is not None else ""
    return (f"{len(wrong)} id(s) are not where {partitions} {topic} partitions place them ({key!r} is in "
            f"{topic}-{found[key]}, not {coordinator_partition(key, partitions)}): give {option} the cluster's "
            f"partition count{hint}")


__all__ = ["DEFAULT_PARTITIONS", "IdLookup", "java_string_hash", "coordinator_partition", "placement_note"]
