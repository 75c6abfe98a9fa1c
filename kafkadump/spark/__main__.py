"""``python -m kafkadump.spark scan|triage ...``, and the script ``spark-submit`` runs.

    spark-submit --master yarn --conf spark.pyspark.python=/opt/kafkadump/bin/python \\
        "$(python -c 'import kafkadump.spark.__main__ as m; print(m.__file__)')" \\
        triage /mnt/kafka-logs

Absolute imports only: spark-submit runs this file as a script.
"""

import kafkadump.cli  # noqa: F401  (registers every command group, this one included)
from kafkadump.commands.spark import spark_app


def main() -> None:
    spark_app(prog_name="kafkadump spark")


if __name__ == "__main__":
    main()
