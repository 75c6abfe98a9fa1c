"""kafkadump: a forensic inspector for Apache Kafka's binary data."""

__version__ = "0.1.0"
