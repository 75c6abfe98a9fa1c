import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("KAFKADUMP_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"


def need_corpus(sub: str = "") -> Path:
    """The shared corpus path, or skip: it is beside the project, not in it."""
    p = CORPUS / sub
    if not p.exists():
        pytest.skip(f"shared corpus not present at {p} (it lives beside the project, not in a clone)")
    return p


def load_json(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def spark_session():
    """One local[2] SparkSession for every Spark test module (its start costs 10-50 s):
    loopback only, no UI; skips with the reason when pyspark, pyarrow or Java is missing."""
    from spark_session import SETTINGS, spark_or_skip

    spark_or_skip()
    from kafkadump.spark.session import build

    s = build("local[2]", dict(SETTINGS))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The Spark tests' generated log dirs (``spark_fleet.make_fleet``): its facts, ``root`` added."""
    from spark_fleet import make_fleet

    root = tmp_path_factory.mktemp("fleet")
    facts = make_fleet(str(root))
    facts["root"] = str(root)
    return facts


@pytest.fixture(scope="session")
def incident(tmp_path_factory):
    """The single-broker incident (``tests/broker/incident.py``): a real Kafka written by real clients,
    its live tools asked, then stopped cleanly; skips with the reason when Java or Maven is missing."""
    from broker.harness import missing_tools

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    from broker.incident import build

    return build(tmp_path_factory.mktemp("incident"))
