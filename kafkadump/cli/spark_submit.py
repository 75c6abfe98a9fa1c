"""The script ``spark-submit`` runs: ``kafkadump spark scan|triage ...`` on a cluster.

    spark-submit --master yarn --conf spark.pyspark.python=/opt/kafkadump/bin/python \\
        "$(python -c 'import kafkadump.cli.spark_submit as m; print(m.__file__)')" \\
        triage /mnt/kafka-logs

Absolute imports only: spark-submit runs this file as a script.
"""

import sys

from kafkadump.cli import main


def submit() -> None:
    """Run ``kafkadump spark ARGS...`` with this script's arguments."""
    sys.argv = ["kafkadump", "spark", *sys.argv[1:]]
    main()


if __name__ == "__main__":
    submit()
