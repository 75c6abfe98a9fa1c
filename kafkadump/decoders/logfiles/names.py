"""What a file or directory in a Kafka log dir is, from its name alone.

    log dir (one of log.dirs)
        meta.properties                       version, broker.id / node.id, cluster.id, directory.id
        recovery-point-offset-checkpoint      \\
        replication-offset-checkpoint          |  version 0, count, "topic partition offset" lines
        log-start-offset-checkpoint            |
        cleaner-offset-checkpoint             /
        bootstrap.checkpoint                  KRaft bootstrap metadata: record batches
        .lock, .kafka_cleanshutdown           markers
        TOPIC-PARTITION/                      one partition (TOPIC-PARTITION.UUID-delete / -future / -stray:
                                              being deleted / moved between log dirs / left behind)
            00000000000000000000.log          segment: record batches, named by its base offset (20 digits)
            00000000000000000000.index        offset index: (INT32 relativeOffset, INT32 position) entries
            00000000000000000000.timeindex    time index: (INT64 timestamp, INT32 relativeOffset) entries
            00000000000000000000.txnindex     aborted transactions: 34-byte entries
            00000000000000000000.snapshot     producer state at that offset
            *.deleted / *.cleaned / *.swap    the same files while being deleted / compacted / swapped in
            leader-epoch-checkpoint           version 0, count, "epoch startOffset" lines
            partition.metadata                "version: 0", "topic_id: BASE64"
        __cluster_metadata-0/                 the KRaft metadata log, plus
            quorum-state                      JSON: leader, epoch, voters
            OFFSET-EPOCH.checkpoint           KRaft snapshot: record batches (20 and 10 digits)
            OFFSET-EPOCH.checkpoint.part      a snapshot being written
        remote-log-index-cache/               tiered storage: the broker's cache of remote segments' indexes
            OFFSET_UUID_.index / .timeindex / .txnindex     (OFFSET: the remote segment's start offset,
                                                             decimal; UUID: its id, 22 base64url characters)

    tiered storage (a remote storage's copy of a partition, e.g. Kafka's local tiered storage)
        OFFSET-UUID.log / .index / .timeindex / .txnindex / .snapshot / .leader_epoch_checkpoint
                                              one remote log segment's files: the same formats as the
                                              local ones (the segment's start offset, decimal, and its
                                              remote log segment id)

Nothing here reads a file.
"""

from __future__ import annotations

import os
import re

from kafkadump.base.values import FrozenValue

# kinds, as they appear in output
SEGMENT = "segment"
OFFSET_INDEX = "offset-index"
TIME_INDEX = "time-index"
TXN_INDEX = "txn-index"
PRODUCER_SNAPSHOT = "producer-snapshot"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition-metadata"
OFFSET_CHECKPOINT = "offset-checkpoint"
META_PROPERTIES = "meta-properties"
QUORUM_STATE = "quorum-state"
KRAFT_SNAPSHOT = "kraft-snapshot"
MARKER = "marker"
UNKNOWN = "unknown"

KINDS = (SEGMENT, OFFSET_INDEX, TIME_INDEX, TXN_INDEX, PRODUCER_SNAPSHOT, LEADER_EPOCH_CHECKPOINT,
         PARTITION_METADATA, OFFSET_CHECKPOINT, META_PROPERTIES, QUORUM_STATE, KRAFT_SNAPSHOT)

_BY_EXT = {".log": SEGMENT, ".index": OFFSET_INDEX, ".timeindex": TIME_INDEX, ".txnindex": TXN_INDEX,
           ".snapshot": PRODUCER_SNAPSHOT}

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")

# what each pending suffix means
SUFFIXES = {
    ".deleted": "scheduled for deletion (the broker deletes it after file.delete.delay.ms)",
    ".cleaned": "written by the log cleaner and not yet swapped in (discarded on restart)",
    ".swap": "a cleaned or split segment being swapped in (completed on restart)",
    ".part": "a KRaft snapshot still being written (discarded on restart)",
}

_OFFSET_NAME = re.compile(r"^(-?\d+)$")
_UUID = r"[A-Za-z0-9_-]{22}"
_REMOTE_FILE = re.compile(r"^(?P<o>\d+)-(?P<id>" + _UUID + r")(?P<ext>\.[a-z_]+)$")
_INDEX_CACHE_FILE = re.compile(r"^(?P<o>\d+)_(?P<id>" + _UUID + r")_(?P<ext>\.[a-z]+)$")
INDEX_CACHE_DIR = "remote-log-index-cache"

# where a file belongs, beyond the local log (FileName.tier)
REMOTE = "remote"              # a remote log segment's files (tiered storage)
INDEX_CACHE = "index-cache"    # the broker's remote-log-index-cache/
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<uid>[0-9a-fA-F]{32})-(?P<state>delete|future|stray))?$")


class FileName(FrozenValue):
    """A file's kind and what its name says.

    ``offset`` is the base offset (segments, indexes, producer snapshots) or
    the end offset (KRaft snapshots); ``epoch`` the KRaft snapshot's epoch;
    ``suffix`` a pending-operation suffix (``.deleted``, ``.cleaned``,
    ``.swap``, ``.part``) or None; ``stem`` the name without that suffix
    nor the extension (segment siblings share it).
    """

    __match_args__ = ("kind", "offset", "epoch", "suffix", "stem", "checkpoint", "tier", "remote_id")
    kind: str
    offset: int | None
    epoch: int | None
    suffix: str | None
    stem: str | None
    checkpoint: str | None  # which broker checkpoint (its file name)
    tier: str | None        # REMOTE or INDEX_CACHE for tiered storage files, else None
    remote_id: str | None   # the remote log segment id in a tiered storage file's name

    def __init__(self, kind: str, offset: int | None = None, epoch: int | None = None, suffix: str | None = None,
                 stem: str | None = None, checkpoint: str | None = None, tier: str | None = None,
                 remote_id: str | None = None) -> None:
        self._set(kind=kind, offset=offset, epoch=epoch, suffix=suffix, stem=stem, checkpoint=checkpoint, tier=tier,
                  remote_id=remote_id)


def classify(path: str) -> FileName:
    """The :class:`FileName` of ``path`` (by its base name only)."""
    name = os.path.basename(path)
    suffix = None
    for s in SUFFIXES:
        if name.endswith(s) and len(name) > len(s):
            suffix = s
            name = name[: -len(s)]
            break
    m = _KRAFT_SNAPSHOT.match(name)
    if m:
        return FileName(KRAFT_SNAPSHOT, int(m.group(1)), int(m.group(2)), suffix, name[: -len(".checkpoint")])
    if name == "bootstrap.checkpoint":
        return FileName(KRAFT_SNAPSHOT, None, None, suffix, "bootstrap")
    tiered = _tiered(name, suffix)
    if tiered is not None:
        return tiered
    stem, ext = os.path.splitext(name)
    if ext in _BY_EXT:
        m = _OFFSET_NAME.match(stem)
        return FileName(_BY_EXT[ext], int(m.group(1)) if m else None, None, suffix, stem)
    if suffix is not None:
        return FileName(UNKNOWN, suffix=suffix, stem=name)
    if name == "leader-epoch-checkpoint":
        return FileName(LEADER_EPOCH_CHECKPOINT)
    if name == "partition.metadata":
        return FileName(PARTITION_METADATA)
    if name in OFFSET_CHECKPOINTS:
        return FileName(OFFSET_CHECKPOINT, checkpoint=name)
    if name == "meta.properties":
        return FileName(META_PROPERTIES)
    if name == "quorum-state":
        return FileName(QUORUM_STATE)
    if name in (".lock", ".kafka_cleanshutdown"):
        return FileName(MARKER)
    return FileName(UNKNOWN)


def _tiered(name: str, suffix: str | None) -> FileName | None:
    """A remote log segment's file (``OFFSET-UUID.ext``) or a remote index cache file
    (``OFFSET_UUID_.ext``), else None."""
    m = _REMOTE_FILE.match(name)
    tier = REMOTE
    if m is None:
        m = _INDEX_CACHE_FILE.match(name)
        tier = INDEX_CACHE
    if m is None:
        return None
    ext = m.group("ext")
    kind = LEADER_EPOCH_CHECKPOINT if ext == ".leader_epoch_checkpoint" and tier == REMOTE else _BY_EXT.get(ext)
    if kind is None or (tier == INDEX_CACHE and kind not in (OFFSET_INDEX, TIME_INDEX, TXN_INDEX)):
        return None
    return FileName(kind, int(m.group("o")), None, suffix, name[: -len(ext)], tier=tier, remote_id=m.group("id"))


class PartitionDir(FrozenValue):
    __match_args__ = ("topic", "partition", "state")
    topic: str
    partition: int
    state: str | None  # None, "delete", "future" or "stray"

    def __init__(self, topic: str, partition: int, state: str | None) -> None:
        self._set(topic=topic, partition=partition, state=state)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def parse_partition_dir(path: str) -> PartitionDir | None:
    """``orders-3`` -> PartitionDir("orders", 3, None); None when the name is not a partition's."""
    m = _PARTITION_DIR.match(os.path.basename(os.path.normpath(path)))
    if not m:
        return None
    return PartitionDir(m.group("topic"), int(m.group("partition")), m.group("state"))


def topic_partition(path: str) -> tuple[str, int] | tuple[None, None]:
    """``(topic, partition)`` from the name of the file's directory (``orders-3``, and the
    ``orders-3.<uuid>-delete|-future|-stray`` forms a broker leaves), or ``(None, None)``
    (also for a partition number beyond INT32)."""
    d = parse_partition_dir(os.path.dirname(path.rstrip("/")))
    if d is None or d.partition > 0x7FFFFFFF:
        return None, None
    return d.topic, d.partition


def partition_label(path: str) -> str:
    """What a progress display calls the place of file ``path``: its partition directory's name
    (``orders-3``, ``orders-3.UUID-delete``) when it is in one, else the file's own name."""
    parent = os.path.dirname(os.path.abspath(path))
    if parse_partition_dir(parent) is not None:
        return os.path.basename(parent)
    return os.path.basename(path)


def segment_name(offset: int, ext: str = ".log") -> str:
    return f"{offset:020d}{ext}"


__all__ = ["FileName", "PartitionDir", "classify", "parse_partition_dir", "partition_label", "segment_name",
           "topic_partition", "KINDS", "SUFFIXES", "REMOTE", "INDEX_CACHE", "INDEX_CACHE_DIR"]
