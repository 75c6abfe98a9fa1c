#!/usr/bin/env python3
"""Build man/kafkadump.1 from man/src/kafkadump.1.in and the feature parts.

Each part (man/parts/FEATURE.man) is troff split into chunks by comment lines
``.\\" --- NAME ...``; a chunk goes where the base has ``.\\" @NAME@``
(SYNOPSIS, COMMANDS, OPTIONS, JSON CONTRACT, FINDING CODES, EXIT STATUS,
EXAMPLES; any other name goes to EXTRA, before SEE ALSO).

    python3 tools/build_man.py [FEATURE ...]    (default: every part)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOTS = ("SYNOPSIS", "COMMANDS", "OPTIONS", "JSON CONTRACT", "FINDING CODES", "EXIT STATUS", "EXAMPLES")


def chunks(text: str) -> dict:
    out: dict = {}
    slot = None
    for line in text.splitlines(keepends=True):
        m = re.match(r'\.\\" --- (.+?)\s*-*\s*$', line)
        if m:
            name = m.group(1).upper()
            slot = next((s for s in SLOTS if name.startswith(s)), "EXTRA")
            continue
        if slot is not None:
            out.setdefault(slot, []).append(line)
    return out


def build(features) -> str:
    base = (ROOT / "man/src/kafkadump.1.in").read_text()
    merged: dict = {}
    for f in features:
        for slot, lines in chunks((ROOT / "man/parts" / f"{f}.man").read_text()).items():
            if slot == "SYNOPSIS":
                lines = [*lines, ".br\n"]  # one command a line
            elif slot == "EXAMPLES":
                lines = [x for x in lines if x.strip() not in (".SH EXAMPLES", ".nf", ".fi")]
            merged.setdefault(slot, []).extend(lines)
    for slot in SLOTS + ("EXTRA",):
        base = base.replace(f'.\\" @{slot}@\n', "".join(merged.get(slot, [])))
    return base


if __name__ == "__main__":
    feats = sys.argv[1:] or sorted(p.stem for p in (ROOT / "man/parts").glob("*.man"))
    (ROOT / "man/kafkadump.1").write_text(build(feats))
    print("man/kafkadump.1 built from", ", ".join(["base"] + feats))
