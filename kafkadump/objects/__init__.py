"""The report model: kafkadump's JSON contract, defined once.

Every object kafkadump reports (batch, record, gap, finding, frame, file,
partition, triage) is built here from what the decoders produced; the table,
JSON Lines, dump-log, capture and Spark-row renderers all build from these
objects, so a field has one name and one value everywhere.
"""
