"""What the bytes mean: bytes in, objects and findings out; nothing here prints or raises on bad bytes.

``batches`` (record batches, legacy message sets, the walk), ``protocol`` (the wire protocol),
``internal_topics`` (keys and values of Kafka's internal topics), ``payloads`` (Schema Registry
framing and payload codecs), ``logfiles`` (the other files of a log dir: indexes, snapshots, text
files, names; the segment trackers; carving).
"""
