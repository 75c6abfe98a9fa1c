"""Finding codes, severities and the Finding record.

A finding is kafkadump's word for "something in these bytes is not as the
format says".  Every finding has a stable code (scripts match on it), a
severity, the absolute byte offset in the input where the problem is, and a
human message.  Codes never change meaning; new ones are only ever added.

When the offending bytes live inside decompressed data, ``offset`` is the
file offset of the compressed payload that produced them and
``source_offset`` is the offset inside the decompressed stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"      # the data is damaged or cannot be decoded
    WARNING = "warning"  # decodable, but not what a well-behaved writer produces
    INFO = "info"        # normal but noteworthy (padding, legacy quirks)


class Code(str, Enum):
    """Stable finding codes.  The value is what appears in output."""

    # --- batch framing ---------------------------------------------------
    TRUNCATED = "truncated"                    # input ends inside a batch or message
    LENGTH_INVALID = "length-invalid"          # batchLength / message_size impossible
    UNKNOWN_MAGIC = "unknown-magic"            # magic byte not 0, 1 or 2
    GARBAGE = "garbage"                        # bytes skipped while looking for the next batch
    ZERO_PADDING = "zero-padding"              # all-zero tail (preallocated segment)
    LENGTH_REPAIRED = "length-repaired"        # batchLength wrong, the CRC confirms the batch up to the next one
    # --- integrity -------------------------------------------------------
    CRC_MISMATCH = "crc-mismatch"              # stored CRC differs from computed
    # --- batch header consistency ---------------------------------------
    UNKNOWN_CODEC = "unknown-codec"            # compression bits 5..7
    RESERVED_ATTRIBUTES = "reserved-attributes"  # unused attribute bits set
    RECORD_COUNT_MISMATCH = "record-count-mismatch"  # recordCount vs records present
    OFFSET_DELTA_MISMATCH = "offset-delta-mismatch"  # record offsetDelta beyond lastOffsetDelta / not increasing
    TIMESTAMP_MISMATCH = "timestamp-mismatch"  # maxTimestamp vs the records' timestamps
    TRAILING_BYTES = "trailing-bytes"          # bytes left after the last record of a batch
    HEADER_INVALID = "header-invalid"          # impossible header value (negative count, ...)
    # --- records ---------------------------------------------------------
    RECORD_MALFORMED = "record-malformed"      # a record's fields do not fit its length
    CONTROL_MALFORMED = "control-malformed"    # control record key/value undecodable
    CONTROL_UNKNOWN = "control-unknown"        # control type not known to kafkadump
    # --- compression -----------------------------------------------------
    DECOMPRESSION_FAILED = "decompression-failed"
    DECOMPRESSION_LIMIT = "decompression-limit"  # output would exceed the cap
    DECOMPRESSION_RATIO = "decompression-ratio"  # output/input ratio only a bomb has
    LZ4_LEGACY_CHECKSUM = "lz4-legacy-checksum"  # old Kafka LZ4 frame-header checksum
    # --- legacy message sets --------------------------------------------
    NESTING_TOO_DEEP = "nesting-too-deep"
    NESTED_COMPRESSION = "nested-compression"  # compressed message inside a compressed wrapper
    INNER_OFFSETS = "inner-offsets"            # inner offsets inconsistent with the wrapper
    # --- whole-file ------------------------------------------------------
    OFFSET_ORDER = "offset-order"              # batch offsets go backwards within a file
    SCAN_LIMIT = "scan-limit"                  # resync CRC budget spent: later candidates checked by header
    FILE_CHANGED = "file-changed"              # the file shrank while it was read (truncated by the broker?)
    TRACKING_LIMIT = "tracking-limit"          # more entities (producers) than kafkadump follows: the rest not checked
    FINDINGS_SUMMARISED = "findings-summarised"  # more findings of a code than are listed: count, first, last
    SPAN_LIMIT = "span-limit"                  # hexdump: records past the first 10,000 shown as one block
    # --- log directories: indexes, snapshots, checkpoints, cross-checks (kafkadump.decoders.logfiles, kafkadump.reports) ---
    INDEX_ENTRY_MISMATCH = "index-entry-mismatch"    # offset index entry not at a batch boundary with its offset
    INDEX_NOT_MONOTONIC = "index-not-monotonic"      # offset index entries go backwards
    INDEX_OUT_OF_STEP = "index-out-of-step"          # index entries point outside the log: another version of it
    TIMEINDEX_NOT_MONOTONIC = "timeindex-not-monotonic"  # time index timestamps/offsets go backwards
    TIMEINDEX_MISMATCH = "timeindex-mismatch"        # time index entry disagrees with the log
    TXNINDEX_MISMATCH = "txnindex-mismatch"          # .txnindex disagrees with the ABORT markers in the log
    ENTRY_INVALID = "entry-invalid"                  # an index/snapshot entry holds an impossible value
    FILE_VERSION_UNKNOWN = "file-version-unknown"    # a log-dir file's format version is unknown
    FILE_MALFORMED = "file-malformed"                # a checkpoint/properties/metadata file breaks its format
    OFFSET_GAP = "offset-gap"                        # offsets absent between batches or segments
    SEGMENT_NAME_MISMATCH = "segment-name-mismatch"  # a segment holds offsets below its file name's base offset
    SEQUENCE_GAP = "sequence-gap"                    # producer sequence skips numbers with no offsets missing
    SEQUENCE_ORDER = "sequence-order"                # producer sequence or epoch goes backwards
    OPEN_TRANSACTION = "open-transaction"            # transactional data with no COMMIT/ABORT marker after it
    ABORTED_TRANSACTION = "aborted-transaction"      # a transaction closed by an ABORT marker
    HANGING_TRANSACTION = "hanging-transaction"      # open transactional data the coordinator will never close
    COMMITTED_BEYOND_LOG_END = "committed-beyond-log-end"  # a group's committed offset past the partition's log end
    LEADER_EPOCH_MISMATCH = "leader-epoch-mismatch"  # batch leader epochs disagree with leader-epoch-checkpoint
    PRODUCER_SNAPSHOT_MISMATCH = "producer-snapshot-mismatch"  # producer snapshot disagrees with the log
    SNAPSHOT_INCOMPLETE = "snapshot-incomplete"      # KRaft snapshot without SNAPSHOT_HEADER / SNAPSHOT_FOOTER
    CHECKPOINT_MISMATCH = "checkpoint-mismatch"      # a broker checkpoint or partition.metadata disagrees with the logs
    PENDING_FILE = "pending-file"                    # .deleted/.cleaned/.swap file or -delete/-future directory
    ORPHAN_FILE = "orphan-file"                      # an index or snapshot whose segment .log is absent
    REMOTE_COPY_UNFINISHED = "remote-copy-unfinished"  # a remote segment's copy started, never finished
    REMOTE_SEGMENT_OVERLAP = "remote-segment-overlap"  # two finished remote segments hold the same offsets
    REMOTE_SEGMENT_GAP = "remote-segment-gap"          # offsets between finished remote segments in none
    REMOTE_SEGMENT_MISMATCH = "remote-segment-mismatch"  # a remote segment file disagrees with its metadata
    NOT_KAFKA = "not-kafka"                          # a file in the tree that is not Kafka's (an image, a pcap, a program)
    # --- wire protocol (capture) -------------------------------------------
    FRAME_SIZE_INVALID = "frame-size-invalid"  # a frame's size prefix is impossible or wrong
    FRAME_TRAILING = "frame-trailing-bytes"    # bytes left in a frame after its decoded body
    FIELD_MALFORMED = "field-malformed"        # a protocol field does not decode (length, count, UTF-8)
    TAGGED_FIELD_ORDER = "tagged-field-order"  # tagged fields out of ascending order or repeated
    TAGGED_FIELD_UNKNOWN = "tagged-field-unknown"  # a tag the schema tables do not know (kept raw)
    VERSION_UNKNOWN = "version-unknown"        # version newer than the schema tables
    API_KEY_UNKNOWN = "api-key-unknown"        # API key not in the schema tables
    RESPONSE_UNPAIRED = "response-unpaired"    # response with no captured request
    RESPONSE_GUESSED = "response-guessed"      # lone response: API found by trial decoding
    FRAME_AMBIGUOUS = "frame-ambiguous"        # pasted frame reads both as a request and as a response
    PARTIAL_BATCH = "partial-batch"            # last batch of a response cut by the size limit
    TCP_GAP = "tcp-gap"                        # bytes of a TCP stream missing from the capture
    TCP_RETRANSMISSION = "tcp-retransmission"  # TCP data seen again (identical)
    TCP_CONFLICT = "tcp-overlap-conflict"      # retransmitted TCP data differs from the first copy
    CAPTURE_MALFORMED = "capture-malformed"    # pcap/pcapng structure or packet headers broken
    PACKETS_NOT_READ = "packets-not-read"      # packets in the capture kafkadump did not read (counted by reason)
    CLIENT_QUIRK = "client-quirk"              # a known client or broker habit that is not damage (named)
    # --- internal topics (kafkadump.decoders.internal_topics) ------------------------------------
    INTERNAL_TYPE_UNKNOWN = "internal-type-unknown"        # key version / metadata apiKey names no known schema
    INTERNAL_VERSION_UNKNOWN = "internal-version-unknown"  # record/value/frame version beyond the schema tables
    INTERNAL_MALFORMED = "internal-malformed"              # internal-topic key/value does not decode by its schema
    INTERNAL_TRAILING = "internal-trailing-bytes"          # bytes left after a decoded internal key/value
    # --- KRaft metadata history (kafkadump.decoders.internal_topics.metadata_replay) -------------
    UNCLEAN_ELECTION = "unclean-election"      # a partition leader elected from outside the ISR/ELR, or RECOVERING
    TOPIC_RECREATED = "topic-recreated"        # a topic name created again under a new topic id
    INTERNAL_LAYOUT_UNKNOWN = "internal-layout-unknown"    # a record type known by name whose layout is not known
    # --- record payloads (kafkadump.decoders.payloads) ---------------------------------------------
    PAYLOAD_MALFORMED = "payload-malformed"    # a Schema Registry framed payload does not decode with its schema
    SCHEMA_UNKNOWN = "schema-unknown"          # a framed payload names a schema id the store lacks (once per id)
    PAYLOAD_LIMIT = "payload-limit"            # a key or value nests or would expand past the payload limits
    PAYLOAD_MASKED = "payload-masked"          # --redact-fields: a key or value not parsed to find fields, masked whole


SEVERITY: dict[Code, Severity] = {
    Code.TRUNCATED: Severity.ERROR,
    Code.LENGTH_INVALID: Severity.ERROR,
    Code.UNKNOWN_MAGIC: Severity.ERROR,
    Code.GARBAGE: Severity.ERROR,
    Code.ZERO_PADDING: Severity.INFO,
    Code.LENGTH_REPAIRED: Severity.ERROR,
    Code.CRC_MISMATCH: Severity.ERROR,
    Code.UNKNOWN_CODEC: Severity.ERROR,
    Code.RESERVED_ATTRIBUTES: Severity.WARNING,
    Code.RECORD_COUNT_MISMATCH: Severity.ERROR,
    Code.OFFSET_DELTA_MISMATCH: Severity.WARNING,
    Code.TIMESTAMP_MISMATCH: Severity.WARNING,
    Code.TRAILING_BYTES: Severity.ERROR,
    Code.HEADER_INVALID: Severity.ERROR,
    Code.RECORD_MALFORMED: Severity.ERROR,
    Code.CONTROL_MALFORMED: Severity.ERROR,
    Code.CONTROL_UNKNOWN: Severity.WARNING,
    Code.DECOMPRESSION_FAILED: Severity.ERROR,
    Code.DECOMPRESSION_LIMIT: Severity.ERROR,
    Code.DECOMPRESSION_RATIO: Severity.ERROR,
    Code.LZ4_LEGACY_CHECKSUM: Severity.INFO,
    Code.NESTING_TOO_DEEP: Severity.ERROR,
    Code.NESTED_COMPRESSION: Severity.WARNING,
    Code.INNER_OFFSETS: Severity.WARNING,
    Code.OFFSET_ORDER: Severity.WARNING,
    Code.SCAN_LIMIT: Severity.WARNING,
    Code.FILE_CHANGED: Severity.ERROR,
    Code.FINDINGS_SUMMARISED: Severity.INFO,
    Code.TRACKING_LIMIT: Severity.WARNING,
    Code.SPAN_LIMIT: Severity.INFO,
    Code.FRAME_SIZE_INVALID: Severity.ERROR,
    Code.FRAME_TRAILING: Severity.WARNING,
    Code.FIELD_MALFORMED: Severity.ERROR,
    Code.TAGGED_FIELD_ORDER: Severity.ERROR,
    Code.TAGGED_FIELD_UNKNOWN: Severity.INFO,
    Code.VERSION_UNKNOWN: Severity.WARNING,
    Code.CLIENT_QUIRK: Severity.INFO,
    Code.API_KEY_UNKNOWN: Severity.WARNING,
    Code.RESPONSE_UNPAIRED: Severity.WARNING,
    Code.RESPONSE_GUESSED: Severity.INFO,
    Code.FRAME_AMBIGUOUS: Severity.INFO,
    Code.PARTIAL_BATCH: Severity.INFO,
    Code.TCP_GAP: Severity.ERROR,
    Code.TCP_RETRANSMISSION: Severity.INFO,
    Code.TCP_CONFLICT: Severity.WARNING,
    Code.CAPTURE_MALFORMED: Severity.ERROR,
    Code.PACKETS_NOT_READ: Severity.WARNING,
    # log directories (kafkadump.decoders.logfiles, kafkadump.reports)
    Code.INDEX_ENTRY_MISMATCH: Severity.ERROR,
    Code.INDEX_NOT_MONOTONIC: Severity.ERROR,
    Code.INDEX_OUT_OF_STEP: Severity.WARNING,
    Code.TIMEINDEX_NOT_MONOTONIC: Severity.ERROR,
    Code.TIMEINDEX_MISMATCH: Severity.WARNING,
    Code.TXNINDEX_MISMATCH: Severity.WARNING,
    Code.ENTRY_INVALID: Severity.ERROR,
    Code.FILE_VERSION_UNKNOWN: Severity.ERROR,
    Code.FILE_MALFORMED: Severity.ERROR,
    Code.OFFSET_GAP: Severity.INFO,
    Code.SEGMENT_NAME_MISMATCH: Severity.ERROR,
    Code.SEQUENCE_GAP: Severity.WARNING,
    Code.SEQUENCE_ORDER: Severity.WARNING,
    Code.OPEN_TRANSACTION: Severity.WARNING,
    Code.ABORTED_TRANSACTION: Severity.INFO,
    Code.HANGING_TRANSACTION: Severity.ERROR,
    Code.COMMITTED_BEYOND_LOG_END: Severity.WARNING,
    Code.LEADER_EPOCH_MISMATCH: Severity.WARNING,
    Code.PRODUCER_SNAPSHOT_MISMATCH: Severity.WARNING,
    Code.SNAPSHOT_INCOMPLETE: Severity.ERROR,
    Code.CHECKPOINT_MISMATCH: Severity.WARNING,
    Code.PENDING_FILE: Severity.INFO,
    Code.ORPHAN_FILE: Severity.INFO,
    Code.REMOTE_COPY_UNFINISHED: Severity.WARNING,
    Code.REMOTE_SEGMENT_OVERLAP: Severity.WARNING,
    Code.REMOTE_SEGMENT_GAP: Severity.WARNING,
    Code.REMOTE_SEGMENT_MISMATCH: Severity.WARNING,
    Code.NOT_KAFKA: Severity.WARNING,
    # internal topics (kafkadump.decoders.internal_topics)
    Code.INTERNAL_TYPE_UNKNOWN: Severity.WARNING,
    Code.INTERNAL_VERSION_UNKNOWN: Severity.WARNING,
    Code.INTERNAL_MALFORMED: Severity.ERROR,
    Code.INTERNAL_TRAILING: Severity.WARNING,
    # KRaft metadata history
    Code.UNCLEAN_ELECTION: Severity.WARNING,
    Code.TOPIC_RECREATED: Severity.WARNING,
    Code.INTERNAL_LAYOUT_UNKNOWN: Severity.INFO,
    Code.PAYLOAD_MALFORMED: Severity.WARNING,
    Code.SCHEMA_UNKNOWN: Severity.INFO,
    Code.PAYLOAD_LIMIT: Severity.WARNING,
    Code.PAYLOAD_MASKED: Severity.INFO,
}

DESCRIPTION: dict[Code, str] = {
    Code.TRUNCATED: "the input ends before the batch or message it declares",
    Code.LENGTH_INVALID: "a batch or message length is impossible (too small, or past the end)",
    Code.UNKNOWN_MAGIC: "the magic byte is not 0, 1 or 2",
    Code.GARBAGE: "bytes that are not part of any batch were skipped",
    Code.ZERO_PADDING: "the file ends with zero bytes (a preallocated segment's unused tail)",
    Code.LENGTH_REPAIRED: "a v2 batch's batchLength is wrong, but its stored CRC-32C matches the bytes from "
                          "attributes up to the next intact batch (or the end): the batch is intact but for its "
                          "length field, and is decoded with the length those bytes give (carve writes it repaired)",
    Code.CRC_MISMATCH: "the stored CRC differs from the CRC computed over the bytes",
    Code.UNKNOWN_CODEC: "the compression codec bits name no known codec",
    Code.RESERVED_ATTRIBUTES: "attribute bits that the format leaves unused are set",
    Code.RECORD_COUNT_MISMATCH: "the number of records differs from recordCount",
    Code.OFFSET_DELTA_MISMATCH: "a record's offsetDelta is out of order or beyond lastOffsetDelta",
    Code.TIMESTAMP_MISMATCH: "maxTimestamp differs from the largest record timestamp",
    Code.TRAILING_BYTES: "bytes remain in a batch after its last record",
    Code.HEADER_INVALID: "a batch header field holds an impossible value",
    Code.RECORD_MALFORMED: "a record's fields do not fit in its declared length",
    Code.CONTROL_MALFORMED: "a control record's key or value cannot be decoded",
    Code.CONTROL_UNKNOWN: "a control record type unknown to kafkadump",
    Code.DECOMPRESSION_FAILED: "the compressed records could not be decompressed",
    Code.DECOMPRESSION_LIMIT: "decompressed output would exceed the configured cap",
    Code.DECOMPRESSION_RATIO: "decompressed output would exceed the configured ratio to its compressed size "
                              "(--max-ratio): a decompression bomb, not expanded",
    Code.LZ4_LEGACY_CHECKSUM: "LZ4 frame written with Kafka's old (pre-0.10) header checksum",
    Code.NESTING_TOO_DEEP: "legacy wrapper messages nested deeper than the limit",
    Code.NESTED_COMPRESSION: "a compressed message inside a compressed wrapper",
    Code.INNER_OFFSETS: "inner message offsets are inconsistent with their wrapper",
    Code.OFFSET_ORDER: "a batch's offsets are not after the previous batch's",
    Code.SCAN_LIMIT: "resynchronising after damage spent its CRC budget (--max-scan times the input) on "
                     "candidates that were not intact batches; from the offset given, candidates are accepted "
                     "by their headers (bounded work on hostile input)",
    Code.FILE_CHANGED: "the file shrank while kafkadump read it (log retention or recovery truncating a live "
                       "segment): the bytes still there are decoded, the rest is gone",
    Code.TRACKING_LIMIT: "more producers in a segment or partition than kafkadump follows (its state is "
                         "bounded): the sequences and transactions of the producers beyond are not checked",
    Code.FINDINGS_SUMMARISED: "more findings of one code than are listed (a long damaged range): how many more, "
                              "and the offsets of the first and the last of them (offset and length span them)",
    Code.SPAN_LIMIT: "a batch holds more records than a hexdump annotates field by field; the records past "
                     "the limit are shown as one block (bounded memory on batches of millions of records)",
    Code.FRAME_SIZE_INVALID: "a protocol frame's size prefix is impossible or disagrees with its body",
    Code.FRAME_TRAILING: "bytes remain in a protocol frame after its decoded body",
    Code.FIELD_MALFORMED: "a request or response field cannot be decoded (length, count, UTF-8)",
    Code.TAGGED_FIELD_ORDER: "tagged fields are not in strictly ascending tag order",
    Code.TAGGED_FIELD_UNKNOWN: "a tagged field unknown to kafkadump's schema tables (kept as raw bytes)",
    Code.VERSION_UNKNOWN: "an API version outside kafkadump's schema tables: the header is decoded, the body is "
                          "kept raw (no field is named from another version's layout); the message says where "
                          "the tables stop",
    Code.CLIENT_QUIRK: "a known habit of a client or broker that is not damage, named in the message: an "
                       "ApiVersions v0 request with zero bytes after its empty body (some librdkafka versions), an "
                       "UNSUPPORTED_VERSION ApiVersions answer in the v0 layout (KIP-511), or in the layout "
                       "librdkafka's mock broker writes (a one-byte count, no tagged fields)",
    Code.API_KEY_UNKNOWN: "an API key unknown to kafkadump's schema tables (body kept as raw bytes)",
    Code.RESPONSE_UNPAIRED: "a response whose request is not in the capture",
    Code.RESPONSE_GUESSED: "a response without its request, decoded as the only API that fits",
    Code.FRAME_AMBIGUOUS: "a pasted frame reads both as a request and as a response: the reading that fits "
                          "exactly is shown (the request when both do), the other is named",
    Code.PARTIAL_BATCH: "a response's last batch is cut short by the fetch size limit (normal)",
    Code.TCP_GAP: "bytes of a TCP stream are missing from the capture",
    Code.TCP_RETRANSMISSION: "TCP data retransmitted (identical copy ignored)",
    Code.TCP_CONFLICT: "retransmitted TCP data differs from the first copy (first copy kept)",
    Code.CAPTURE_MALFORMED: "the pcap/pcapng file or a packet header in it is malformed",
    Code.PACKETS_NOT_READ: "packets in the capture that kafkadump did not read, counted by reason (a link type it "
                           "cannot read, fragments never completed, headers cut short): their bytes are in the "
                           "file, not missing from the capture",
    # log directories (kafkadump.decoders.logfiles, kafkadump.reports)
    Code.INDEX_ENTRY_MISMATCH: "an offset index entry does not point at a batch boundary whose offsets match it",
    Code.INDEX_NOT_MONOTONIC: "offset index entries do not increase (offset or position goes backwards)",
    Code.INDEX_OUT_OF_STEP: "index entries point outside the log (beyond its end, before its first offset): the index "
                            "describes another version of the log (truncated, rewritten, or copied out of step)",
    Code.TIMEINDEX_NOT_MONOTONIC: "time index timestamps or offsets do not increase",
    Code.TIMEINDEX_MISMATCH: "a time index entry disagrees with the batch holding its offset",
    Code.TXNINDEX_MISMATCH: "the transaction index disagrees with the ABORT markers in the log",
    Code.ENTRY_INVALID: "an index or snapshot entry holds an impossible value",
    Code.FILE_VERSION_UNKNOWN: "a log-dir file's format version is one kafkadump does not know",
    Code.FILE_MALFORMED: "a checkpoint, properties or metadata file does not follow its format",
    Code.OFFSET_GAP: "offsets are absent between batches or segments (log compaction, or near damage: lost)",
    Code.SEGMENT_NAME_MISMATCH: "a segment holds offsets below the base offset in its file name",
    Code.SEQUENCE_GAP: "a producer's sequence numbers skip with no offsets missing in between",
    Code.SEQUENCE_ORDER: "a producer's sequence number or epoch goes backwards (duplicate or zombie write)",
    Code.OPEN_TRANSACTION: "transactional data with no COMMIT or ABORT marker after it",
    Code.ABORTED_TRANSACTION: "a transaction was aborted (its data stays in the log, hidden from read_committed)",
    Code.HANGING_TRANSACTION: "transactional data with no marker that its coordinator has completed, does not list, "
                              "or let time out: the partition's last stable offset is stuck there until it is "
                              "aborted",
    Code.COMMITTED_BEYOND_LOG_END: "a consumer group's committed offset is beyond the log end offset of the "
                                   "partition on disk (data lost or truncated after the commit, or another copy)",
    Code.LEADER_EPOCH_MISMATCH: "batch leader epochs disagree with the leader-epoch-checkpoint",
    Code.PRODUCER_SNAPSHOT_MISMATCH: "a producer-state snapshot disagrees with the batches in the log",
    Code.SNAPSHOT_INCOMPLETE: "a KRaft snapshot lacks its SNAPSHOT_HEADER or SNAPSHOT_FOOTER control record",
    Code.CHECKPOINT_MISMATCH: "a broker checkpoint or partition.metadata disagrees with the partitions on disk",
    Code.PENDING_FILE: "a file or directory the broker was deleting, cleaning or moving (.deleted, .cleaned, .swap, -delete, -future)",
    Code.ORPHAN_FILE: "an index or snapshot file whose segment .log is absent",
    Code.REMOTE_COPY_UNFINISHED: "__remote_log_metadata: a remote segment's copy started (COPY_SEGMENT_STARTED) "
                                 "and never finished",
    Code.REMOTE_SEGMENT_OVERLAP: "__remote_log_metadata: two finished remote segments of a partition hold the same "
                                 "offsets",
    Code.REMOTE_SEGMENT_GAP: "__remote_log_metadata: offsets between two finished remote segments of a partition "
                             "are in no remote segment",
    Code.REMOTE_SEGMENT_MISMATCH: "a remote segment file disagrees with its __remote_log_metadata (offsets, or a "
                                  "segment deleted or never finished)",
    Code.NOT_KAFKA: "a file in a log dir tree that is none of Kafka's (an image, a capture, a program, an archive, "
                    "text): what it seems to be, from its first bytes",
    # internal topics (kafkadump.decoders.internal_topics)
    Code.INTERNAL_TYPE_UNKNOWN: "an internal topic record's type (key version, metadata apiKey) is in no schema "
                                "kafkadump knows (kept as raw bytes)",
    Code.INTERNAL_VERSION_UNKNOWN: "an internal topic record's version (value, metadata record, frame or embedded "
                                   "consumer protocol version) is beyond kafkadump's schema tables (kept as raw bytes)",
    Code.INTERNAL_MALFORMED: "an internal topic record's key or value does not decode by its schema "
                             "(null or too short, a length or count that does not fit, invalid UTF-8, a bad frame)",
    Code.INTERNAL_TRAILING: "bytes remain after an internal topic record's decoded key or value",
    # KRaft metadata history
    Code.UNCLEAN_ELECTION: "a KRaft metadata record elects a partition leader uncleanly: it sets "
                           "LeaderRecoveryState RECOVERING, or the new leader was in neither the previous ISR nor "
                           "the previous ELR (records the replicas had may be lost)",
    Code.TOPIC_RECREATED: "a KRaft TopicRecord creates a topic under a name another topic id had (a topic deleted "
                          "and re-created: consumers' offsets and old replicas belong to the old topic)",
    Code.INTERNAL_LAYOUT_UNKNOWN: "an internal topic record of a type Kafka writes (named) whose value layout no "
                                  "source kafkadump has describes, e.g. the streams group records (kept as raw bytes)",
    Code.PAYLOAD_MALFORMED: "a key or value framed for Schema Registry (magic byte 0 and a schema id, or a schema id "
                            "header) whose schema is in the store does not decode with it (the reason and the schema "
                            "id are named; the offset is where the payload starts; the raw bytes are kept)",
    Code.SCHEMA_UNKNOWN: "a key or value framed for Schema Registry names a schema id (or GUID) the schema store "
                         "lacks: not decoded, reported once per id",
    Code.PAYLOAD_LIMIT: "a key or value that would nest or expand past the payload limits when decoded (JSON nested "
                        "deeper than 64, an Avro decimal of more digits than the limit, a decoded value larger than "
                        "the limit, a schema of more items than the limit): not decoded (the raw bytes are kept); the offset is the byte where the limit "
                        "was passed, or where the payload starts",
    Code.PAYLOAD_MASKED: "under --redact-fields, a key or value that did not parse (not decoded with a schema, not "
                         "plain JSON) so that no field could be found in it: shown as its digest alone, in every "
                         "output (reported once per side and run)",
}


class Finding:
    """One problem in the bytes, anchored at an absolute offset."""

    __slots__ = ("code", "offset", "message", "length", "source_offset")

    def __init__(self, code: Code, offset: int, message: str,
                 length: int | None = None, source_offset: int | None = None):
        self.code = code
        self.offset = offset
        self.message = message
        self.length = length
        self.source_offset = source_offset

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.code]

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Finding({self.code.value}@{self.offset}: {self.message})"


class BoundedFindings:
    """Findings of one item (a damaged range) with bounded memory: the first ``keep`` of each code
    listed, the rest summarised per code (count, first and last offset) in one
    ``findings-summarised`` finding each."""

    KEEP = 16

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self.kept: list[Finding] = []
        self.counts: dict[Code, int] = {}
        self.more: dict[Code, list[int]] = {}   # code -> [count, first offset, last offset]

    def add(self, f: Finding) -> None:
        n = self.counts[f.code] = self.counts.get(f.code, 0) + 1
        if n <= self.keep:
            self.kept.append(f)
            return
        m = self.more.get(f.code)
        if m is None:
            self.more[f.code] = [1, f.offset, f.offset]
        else:
            m[0] += 1
            m[1] = min(m[1], f.offset)
            m[2] = max(m[2], f.offset)

    def extend(self, fs: list[Finding]) -> None:
        for f in fs:
            self.add(f)

    def findings(self) -> list[Finding]:
        """The listed findings, then one summary per code that had more."""
        out = list(self.kept)
        for code, (count, first, last) in self.more.items():
            out.append(Finding(Code.FINDINGS_SUMMARISED, first,
                               f"{count} more {code.value} findings, not listed: the first at offset {first}, "
                               f"the last at {last}", length=last - first + 1))
        return out


class DecodeError(Exception):
    """Raised inside the decoder; the batch and record loops turn it into a Finding.

    ``offset`` is relative to whatever buffer the raising code was reading;
    the loop that catches it knows how to make it absolute.
    """

    def __init__(self, code: Code, offset: int, message: str):
        super().__init__(message)
        self.code = code
        self.offset = offset
        self.message = message


class Truncated(DecodeError):
    """Raised when a read needs more bytes than exist."""

    def __init__(self, offset: int, needed: int, available: int, what: str = "field"):
        super().__init__(Code.TRUNCATED, offset,
                         f"{what} needs {needed} bytes at {offset}, {max(available, 0)} available")
        self.needed = needed
        self.available = available


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


def worst_severity(codes: Iterable[Code]) -> Severity | None:
    """The most severe severity among finding ``codes`` (None for none)."""
    best = None
    for c in codes:
        sev = SEVERITY[c]
        if best is None or _RANK[sev] > _RANK[best]:
            best = sev
    return best
