"""Control records: the one reader of their key and of the ABORT/COMMIT marker value.

    key   => version: INT16, type: INT16      (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER,
                                               4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS)
    value => ABORT/COMMIT: EndTxnMarker = version: INT16, coordinatorEpoch: INT32
             2..6: a schema of its own (CONTROL_VALUE_SCHEMAS), read at version 0 as Kafka reads them

The batch decoder turns a control record into the small ``control`` dict of
:class:`~kafkadump.decoders.batches.model.Record` (:func:`decode_control`); the
internal-topic decoder reads the same fields for its spans and trailing-byte
findings (:func:`read_control_key`, :func:`read_end_txn_marker`).
"""

from __future__ import annotations

import struct

from kafkadump.base.findings import Code

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
END_TXN_TYPES = (0, 1)
# control record type -> the schema of its value (ABORT/COMMIT: the fixed EndTxnMarker layout)
CONTROL_VALUE_SCHEMAS = {2: "LeaderChangeMessage", 3: "SnapshotHeaderRecord", 4: "SnapshotFooterRecord",
                         5: "KRaftVersionRecord", 6: "VotersRecord"}
CONTROL_KEY_SIZE = 4
END_TXN_SIZE = 6

_CONTROL_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


def control_type_name(ctype: int) -> str:
    """``ABORT``, ``COMMIT``, ... or ``UNKNOWN(n)``."""
    return CONTROL_TYPES.get(ctype) or f"UNKNOWN({ctype})"


def read_control_key(key: bytes | None) -> tuple[int, int] | None:
    """``(version, type)`` of a control record key, or None when it is null or shorter than 4 bytes."""
    if key is None or len(key) < CONTROL_KEY_SIZE:
        return None
    return _CONTROL_KEY.unpack_from(key, 0)


def read_end_txn_marker(value: bytes | None) -> tuple[int, int] | None:
    """``(version, coordinatorEpoch)`` of an ABORT/COMMIT value, or None when null or shorter than 6 bytes."""
    if value is None or len(value) < END_TXN_SIZE:
        return None
    return _END_TXN.unpack_from(value, 0)


def decode_control(key: bytes | None, value: bytes | None) -> tuple[dict, list]:
    """A control record's ``control`` dict and its problems.

    Problems are ``(code, "key" | "value", message)``: the caller anchors
    them at the key or the value.
    """
    problems: list = []
    parsed = read_control_key(key)
    if parsed is None:
        problems.append((Code.CONTROL_MALFORMED, "key", "control record key shorter than 4 bytes"))
        return {"type": None}, problems
    version, ctype = parsed
    ctl: dict = {"type": control_type_name(ctype), "version": version}
    name = CONTROL_TYPES.get(ctype)
    if name is None:
        problems.append((Code.CONTROL_UNKNOWN, "key", f"control record type {ctype}"))
    if ctype in END_TXN_TYPES:
        marker = read_end_txn_marker(value)
        if marker is None:
            what = "null" if value is None else f"{len(value)} bytes"
            problems.append((Code.CONTROL_MALFORMED, "value", f"{name} marker value is {what}"))
        else:
            ctl["valueVersion"], ctl["coordinatorEpoch"] = marker
    return ctl, problems


__all__ = ["CONTROL_TYPES", "CONTROL_VALUE_SCHEMAS", "END_TXN_TYPES", "control_type_name", "read_control_key",
           "read_end_txn_marker", "decode_control"]
