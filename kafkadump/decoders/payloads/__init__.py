"""Payloads: Schema Registry framing, the offline schema store, and Avro / Protobuf / JSON Schema decoding.

``model`` holds the dataclasses the modules hand each other (the contract);
``framing`` says how a key or value is framed; ``store`` loads schemas from
the evidence (a ``_schemas`` partition) or from files; ``decode`` turns a
payload and its schema into JSON-ready values.  The payload libraries
(fastavro, protobuf, grpcio-tools, jsonschema) are the ``payloads`` extra and
are imported only when a payload is decoded.
"""
