"""A tiny fake Kafka broker for tests: just enough protocol for a producer.

It exists so that a real client (librdkafka through confluent-kafka) can be
used as an independent *encoder*: the client builds record batches / message
sets and sends them in Produce requests; the fake keeps the raw ``records``
bytes of each partition exactly as they arrived.

Speaks only old, non-flexible request versions (Kafka 0.9 .. 2.1 era):

    frame            => size:INT32 payload            (size excludes itself)
    request header v1 => api_key:INT16 api_version:INT16 correlation_id:INT32
                         client_id:NULLABLE_STRING
    response header v0 => correlation_id:INT32

    ApiVersions (18) v0-2   error_code:INT16 [api_key min max]:INT16*3 (v1+: throttle_time_ms)
        A request above v2 (librdkafka starts at v3, a flexible version) gets
        the KIP-511 answer: a v0 body with UNSUPPORTED_VERSION (35) and the
        ApiVersions range we support, after which the client retries lower.
    Metadata (3) v0-8       ProduceRequest / MetadataResponse.json field by field
    Produce (0) v0-8        [v3+ transactional_id] acks timeout_ms
                            [topic [partition records:BYTES]]
    InitProducerId (22) v0-1  (idempotent producer) -> fixed producer id, epoch 0

Anything else (another api key, or a version outside those ranges) is logged
as unexpected, recorded in :attr:`FakeBroker.unexpected`, and the connection
is closed (as a real broker does with a request it cannot parse).

Safety: binds 127.0.0.1 on an ephemeral port, serves at most
``max_connections`` connections, and stops by itself after ``lifetime``
seconds even if the test forgets to stop it.  All threads are daemons.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time

log = logging.getLogger("fakebroker")

PRODUCE, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 3, 18, 22
API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
             9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
             17: "SaslHandshake", 18: "ApiVersions", 22: "InitProducerId", 36: "SaslAuthenticate"}

# What this fake can actually parse and answer.
IMPLEMENTED = {PRODUCE: (0, 8), METADATA: (0, 8), API_VERSIONS: (0, 2), INIT_PRODUCER_ID: (0, 1)}

UNSUPPORTED_VERSION = 35

# ApiVersions tables of real broker releases (only the keys a client's feature
# detection looks at).  Keys beyond IMPLEMENTED are advertised so the client
# enables the same features as against that release, but are never served.
_COMMON_09 = {1: (0, 1), 2: (0, 0), 8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 0), 12: (0, 0),
              13: (0, 0), 14: (0, 0), 15: (0, 0), 16: (0, 0)}
KAFKA_0_10_0 = {**_COMMON_09, PRODUCE: (0, 2), 1: (0, 2), METADATA: (0, 1), 17: (0, 0), API_VERSIONS: (0, 0)}
KAFKA_0_11_0 = {**KAFKA_0_10_0, PRODUCE: (0, 3), 1: (0, 5), 2: (0, 2), METADATA: (0, 4), 8: (0, 3),
                9: (0, 3), 10: (0, 1), 11: (0, 2), 12: (0, 1), 13: (0, 1), 14: (0, 1), 15: (0, 1),
                16: (0, 1), API_VERSIONS: (0, 1), INIT_PRODUCER_ID: (0, 0)}
KAFKA_2_1_0 = {**KAFKA_0_11_0, PRODUCE: (0, 7), 1: (0, 10), 2: (0, 4), METADATA: (0, 7), 10: (0, 2),
               17: (0, 1), 36: (0, 0), API_VERSIONS: (0, 2), INIT_PRODUCER_ID: (0, 1)}
# A 0.9 broker has no ApiVersions; a client must be told (broker.version.fallback).
KAFKA_0_9_0 = {**_COMMON_09, PRODUCE: (0, 1), METADATA: (0, 0)}


class ProtocolError(Exception):
    pass


# --- primitive readers / writers ------------------------------------------------

class Reader:
    def __init__(self, buf: bytes, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def _take(self, fmt: str):
        s = struct.Struct(fmt)
        if self.pos + s.size > len(self.buf):
            raise ProtocolError(f"need {s.size} bytes at {self.pos}, have {len(self.buf) - self.pos}")
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return v

    def int8(self):
        return self._take(">b")

    def int16(self):
        return self._take(">h")

    def int32(self):
        return self._take(">i")

    def int64(self):
        return self._take(">q")

    def bool(self):
        return self.int8() != 0

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ProtocolError(f"need {n} bytes at {self.pos}, have {len(self.buf) - self.pos}")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def nullable_string(self):
        n = self.int16()
        return None if n == -1 else self.raw(n).decode("utf-8")

    def string(self):
        s = self.nullable_string()
        if s is None:
            raise ProtocolError("null where a string is required")
        return s

    def nullable_bytes(self):
        n = self.int32()
        return None if n == -1 else self.raw(n)

    def array(self, item, nullable: bool = False):
        n = self.int32()
        if n == -1 and nullable:
            return None
        if n < 0:
            raise ProtocolError(f"array length {n}")
        return [item() for _ in range(n)]


class Writer:
    def __init__(self):
        self.parts = []

    def int8(self, v):
        self.parts.append(struct.pack(">b", v))
        return self

    def bool(self, v):
        return self.int8(1 if v else 0)

    def int16(self, v):
        self.parts.append(struct.pack(">h", v))
        return self

    def int32(self, v):
        self.parts.append(struct.pack(">i", v))
        return self

    def int64(self, v):
        self.parts.append(struct.pack(">q", v))
        return self

    def nullable_string(self, s):
        if s is None:
            return self.int16(-1)
        b = s.encode("utf-8")
        self.int16(len(b))
        self.parts.append(b)
        return self

    string = nullable_string

    def array(self, items, write):
        self.int32(len(items))
        for it in items:
            write(it)
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)


# --- records bookkeeping -----------------------------------------------------

def count_records(records: bytes) -> int:
    """How many offsets a produced records blob takes (for the base offsets we hand out).

    v2 batches: lastOffsetDelta + 1 each; legacy messages: 1 each, a compressed
    wrapper counts as its offset + 1 (the producer writes the last inner
    relative offset there).  Only an estimate for answering; never trusted.
    """
    n = 0
    pos = 0
    while pos + 17 <= len(records):
        offset, length = struct.unpack_from(">qi", records, pos)
        magic = records[pos + 16]
        if magic == 2 and pos + 27 <= len(records):
            (lod,) = struct.unpack_from(">i", records, pos + 23)
            n += lod + 1
        elif magic in (0, 1) and pos + 18 <= len(records):
            n += offset + 1 if records[pos + 17] & 7 and offset >= 0 else 1
        else:
            n += 1
        if length <= 0:
            break
        pos += 12 + length
    return max(n, 1)


class Produced:
    """One partition's records blob from one Produce request."""

    __slots__ = ("topic", "partition", "records", "api_version", "acks", "transactional_id", "base_offset")

    def __init__(self, topic, partition, records, api_version, acks, transactional_id, base_offset):
        self.topic = topic
        self.partition = partition
        self.records = records
        self.api_version = api_version
        self.acks = acks
        self.transactional_id = transactional_id
        self.base_offset = base_offset

    def __repr__(self):  # pragma: no cover
        return (f"Produced({self.topic}[{self.partition}] v{self.api_version} "
                f"{len(self.records) if self.records is not None else None} bytes)")


# --- the broker ----------------------------------------------------------------

class FakeBroker:
    """A one-node "cluster" on 127.0.0.1.  Use as a context manager.

    ``api_versions`` is what ApiVersions answers (see the ``KAFKA_*`` tables);
    ``topics`` maps topic name to partition count; unknown topics asked for in
    Metadata are created with ``default_partitions``.
    """

    def __init__(self, api_versions=None, topics=None, default_partitions=1, node_id=1,
                 producer_id=4242, lifetime=30.0, max_connections=16, cluster_id="fake-cluster"):
        self.api_versions = dict(api_versions or KAFKA_0_11_0)
        self.topics = dict(topics or {})
        self.default_partitions = default_partitions
        self.node_id = node_id
        self.producer_id = producer_id
        self.lifetime = lifetime
        self.max_connections = max_connections
        self.cluster_id = cluster_id
        self.requests: list[tuple[int, int, str | None]] = []   # (api_key, api_version, client_id)
        self.unexpected: list[str] = []
        self.errors: list[str] = []
        self.produced: list[Produced] = []
        self._next_offset: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._sock = None
        self.port = None

    # --- lifecycle -------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        s.settimeout(0.1)
        self._sock = s
        self.port = s.getsockname()[1]
        self._deadline = time.monotonic() + self.lifetime
        t = threading.Thread(target=self._accept_loop, name=f"fakebroker-{self.port}", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=2)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- helpers for tests ---------------------------------------------------
    def records_for(self, topic=None, partition=None) -> list[Produced]:
        with self._lock:
            return [p for p in self.produced
                    if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)]

    def versions_used(self, api_key: int) -> set[int]:
        with self._lock:
            return {v for k, v, _ in self.requests if k == api_key}

    # --- serving ---------------------------------------------------------------
    def _accept_loop(self):
        served = 0
        while not self._stop.is_set():
            if time.monotonic() > self._deadline:
                log.warning("fake broker on port %s: lifetime of %ss over, stopping", self.port, self.lifetime)
                self._stop.set()
                break
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            served += 1
            if served > self.max_connections:
                log.warning("fake broker: connection limit %d reached, refusing", self.max_connections)
                conn.close()
                continue
            conn.settimeout(0.1)
            self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), name=f"fakebroker-conn-{served}", daemon=True)
            t.start()
            self._threads.append(t)
        # whoever stops the loop closes the connections too
        for c in list(self._conns):
            try:
                c.close()
            except OSError:
                pass

    def _recv_exact(self, conn, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            if self._stop.is_set() or time.monotonic() > self._deadline:
                return None
            try:
                chunk = conn.recv(n - len(buf))
            except socket.timeout:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def _serve(self, conn):
        try:
            while True:
                head = self._recv_exact(conn, 4)
                if head is None:
                    return
                (size,) = struct.unpack(">i", head)
                if size < 8 or size > 64 << 20:
                    self._note_unexpected(f"frame size {size}: not a Kafka request; closing")
                    return
                payload = self._recv_exact(conn, size)
                if payload is None:
                    return
                try:
                    resp = self._handle(payload)
                except ProtocolError as e:
                    self.errors.append(f"malformed request: {e}")
                    log.error("fake broker: malformed request: %s", e)
                    return
                except Exception as e:  # noqa: BLE001 - a test helper must report, not die silently
                    self.errors.append(f"{type(e).__name__}: {e}")
                    log.exception("fake broker: handler failed")
                    return
                if resp is False:
                    return  # unexpected request: close the connection
                if resp is not None:
                    conn.sendall(struct.pack(">i", len(resp)) + resp)
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _note_unexpected(self, what: str):
        with self._lock:
            self.unexpected.append(what)
        log.warning("fake broker: UNEXPECTED %s", what)

    def _handle(self, payload: bytes):
        r = Reader(payload)
        api_key, api_version, correlation_id = r.int16(), r.int16(), r.int32()
        client_id = r.nullable_string()
        with self._lock:
            self.requests.append((api_key, api_version, client_id))
        name = API_NAMES.get(api_key, f"api_key {api_key}")
        log.debug("fake broker: %s v%d corr %d from %r", name, api_version, correlation_id, client_id)
        if api_key == API_VERSIONS:
            return struct.pack(">i", correlation_id) + self._api_versions(api_version)
        lo_hi = IMPLEMENTED.get(api_key)
        if lo_hi is None or not lo_hi[0] <= api_version <= lo_hi[1]:
            self._note_unexpected(f"request {name} v{api_version} (correlation {correlation_id}, client "
                                  f"{client_id!r}): not implemented by the fake broker; closing the connection")
            return False
        if api_key == METADATA:
            body = self._metadata(r, api_version)
        elif api_key == PRODUCE:
            body = self._produce(r, api_version)
            if body is None:
                return None  # acks=0: no response
        else:
            body = self._init_producer_id(r, api_version)
        return struct.pack(">i", correlation_id) + body

    # --- ApiVersions -------------------------------------------------------------
    def _api_versions(self, v: int) -> bytes:
        w = Writer()
        if v > IMPLEMENTED[API_VERSIONS][1]:
            # KIP-511: a v0 body saying which ApiVersions versions we speak
            w.int16(UNSUPPORTED_VERSION)
            lo, hi = self.api_versions.get(API_VERSIONS, IMPLEMENTED[API_VERSIONS])
            w.array([(API_VERSIONS, lo, hi)], lambda t: w.int16(t[0]).int16(t[1]).int16(t[2]))
            return w.bytes()
        w.int16(0)
        w.array(sorted(self.api_versions.items()), lambda kv: w.int16(kv[0]).int16(kv[1][0]).int16(kv[1][1]))
        if v >= 1:
            w.int32(0)  # throttle_time_ms
        return w.bytes()

    # --- Metadata ----------------------------------------------------------------
    def _metadata(self, r: Reader, v: int) -> bytes:
        names = r.array(r.string, nullable=v >= 1)
        # (v4+: allow_auto_topic_creation, v8+: include_*_authorized_operations: not needed)
        with self._lock:
            if names is None or (v == 0 and not names):
                wanted = sorted(self.topics)
            else:
                wanted = names
                for n in names:
                    self.topics.setdefault(n, self.default_partitions)
            answer = [(n, self.topics[n]) for n in wanted]
        w = Writer()
        if v >= 3:
            w.int32(0)  # throttle_time_ms

        def broker(_):
            w.int32(self.node_id).string("127.0.0.1").int32(self.port)
            if v >= 1:
                w.nullable_string(None)  # rack

        w.array([None], broker)
        if v >= 2:
            w.nullable_string(self.cluster_id)
        if v >= 1:
            w.int32(self.node_id)  # controller_id

        def partition(i):
            w.int16(0).int32(i).int32(self.node_id)
            if v >= 7:
                w.int32(0)  # leader_epoch
            w.array([self.node_id], w.int32)  # replicas
            w.array([self.node_id], w.int32)  # isr
            if v >= 5:
                w.array([], w.int32)  # offline_replicas

        def topic(t):
            name, nparts = t
            w.int16(0).string(name)
            if v >= 1:
                w.bool(False)  # is_internal
            w.array(list(range(nparts)), partition)
            if v >= 8:
                w.int32(-2147483648)  # topic_authorized_operations

        w.array(answer, topic)
        if v >= 8:
            w.int32(-2147483648)  # cluster_authorized_operations
        return w.bytes()

    # --- Produce -------------------------------------------------------------------
    def _produce(self, r: Reader, v: int):
        txn = r.nullable_string() if v >= 3 else None
        acks = r.int16()
        r.int32()  # timeout_ms

        def partition():
            return r.int32(), r.nullable_bytes()

        def topic():
            return r.string(), r.array(partition)

        data = r.array(topic)
        if r.pos != len(r.buf):
            raise ProtocolError(f"{len(r.buf) - r.pos} bytes after the Produce request body")
        results = []
        with self._lock:
            for name, parts in data:
                pres = []
                for idx, records in parts:
                    key = (name, idx)
                    base = self._next_offset.get(key, 0)
                    if records:
                        self._next_offset[key] = base + count_records(records)
                    self.produced.append(Produced(name, idx, records, v, acks, txn, base))
                    pres.append((idx, base))
                results.append((name, pres))
        if acks == 0:
            return None
        w = Writer()

        def presp(p):
            idx, base = p
            w.int32(idx).int16(0).int64(base)
            if v >= 2:
                w.int64(-1)  # log_append_time_ms: CreateTime topic
            if v >= 5:
                w.int64(0)  # log_start_offset
            if v >= 8:
                w.array([], None)  # record_errors
                w.nullable_string(None)  # error_message

        w.array(results, lambda t: (w.string(t[0]), w.array(t[1], presp)))
        if v >= 1:
            w.int32(0)  # throttle_time_ms
        return w.bytes()

    # --- InitProducerId ------------------------------------------------------------
    def _init_producer_id(self, r: Reader, v: int) -> bytes:
        r.nullable_string()  # transactional_id
        r.int32()  # transaction_timeout_ms
        return Writer().int32(0).int16(0).int64(self.producer_id).int16(0).bytes()
