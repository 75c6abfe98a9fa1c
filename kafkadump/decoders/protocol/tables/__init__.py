"""Compact schema tables generated from Kafka's JSON schemas (``tools/gen_schemas.py``).

Requests and responses the JSON does not cover (versions and APIs added since,
up to Kafka's definitions of 2026-10) come from the ``kio`` package's layouts,
merged onto the JSON's field lists version by version (``tools/kio_layouts.py``).

``messages.MESSAGES`` (from ``message/*.json``: requests, responses, the two
headers and embedded data such as ``ConsumerProtocolSubscription``) and
``records.RECORDS`` (from ``records/*/*.json``: ``__consumer_offsets``,
``__transaction_state``, ``__cluster_metadata``, share coordinator, storage
and raft records) map a schema name to its entry, whose keys are:

    type        "request" | "response" | "header" | "data" | "metadata"
    apiKey      API key (requests/responses) or metadata record type (optional)
    valid       validVersions as a range
    flexible    flexibleVersions as a range, or None ("none")
    fields      the fields, in wire order
    unstable    True when the newest version is marked unstable (optional)
    deprecated  deprecatedVersions range (optional)
    group       the records/ sub-folder, e.g. "group-coordinator" (RECORDS only)

A RECORDS entry is a dict of those keys; a MESSAGES entry is a tuple of their
values in the order of ``messages.KEYS`` (None for an optional key that is
absent), which ``schema.message`` turns into the same dict for the names it is
asked for.  The tables are Python literals of tuples, so each entry is one
constant of the compiled module: loading them unmarshals the .pyc, nothing is
parsed at import.  A range is ``(lo, hi)``; ``hi`` is 32767 for an
open-ended range ("3+"); None means "none".  A field is a 9-element tuple:

    (name, type, versions, nullableVersions, tag, taggedVersions, default, fields, flexibleVersions)

``type`` is as in the schema ("int32", "string", "[]int32", "[]Topic",
"EpochEndOffset"); ``fields`` is the struct's own field list for struct
and struct-array types (common structs already expanded), else None;
``default`` is ``()`` when the schema gives none, else a 1-element tuple holding the
value (None for "null"); ``flexibleVersions`` is False when the field
inherits the message's flexibility, else a range or None ("none").
Fields that are tagged in every version they exist in carry their
taggedVersions as ``versions``.
"""
