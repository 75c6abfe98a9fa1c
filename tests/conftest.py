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
