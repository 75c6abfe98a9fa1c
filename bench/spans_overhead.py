#!/usr/bin/env python3
"""What span recording costs the fast path (records decoding), measured.

The hexdump needs every field's span; the record loop in
kafkadump/decoders/batches/batch.py keeps field starts in locals and only builds spans
when a ``spans`` list is passed.  The price on the fast path is the
``spans is not None`` tests.  This script builds, in the same process, a
copy of the record loop with every span branch removed (an AST rewrite of
the real source, so the two cannot drift apart), checks that both decode
the same records, and times both over the same segment, interleaved.

    .venv/bin/python bench/spans_overhead.py [--size 64M] [--rounds 5]

Prints the per-record times and the overhead in percent (target: < 5 %).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkadump.decoders.batches import batch as B  # noqa: E402
from kafkadump.decoders.batches.batch import decode_batch  # noqa: E402


class _StripSpans(ast.NodeTransformer):
    """Drop ``if spans is not None: ...`` (keep any else) and pass False for ``spans is not None``."""

    @staticmethod
    def _is_spans_test(node) -> bool:
        return (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "spans"
                and len(node.ops) == 1 and isinstance(node.ops[0], ast.IsNot))

    def visit_If(self, node):
        self.generic_visit(node)
        if self._is_spans_test(node.test):
            return node.orelse or ast.Pass()
        return node

    def visit_Compare(self, node):
        if self._is_spans_test(node):
            return ast.Constant(False)
        return self.generic_visit(node)


def stripped_decode_records():
    src = textwrap.dedent(inspect.getsource(B.decode_records))
    tree = ast.fix_missing_locations(_StripSpans().visit(ast.parse(src)))
    ns = dict(vars(B))
    exec(compile(tree, "<decode_records without spans>", "exec"), ns)
    return ns["decode_records"]


def parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1].upper()] if text[-1].upper() in mult else int(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="64M")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.log")
        subprocess.run([sys.executable, str(ROOT / "bench/make_segment.py"), "--size", args.size,
                        "--record-bytes", "40-90", "--records-per-batch", "150", path],
                       check=True, stdout=subprocess.DEVNULL)
        data = Path(path).read_bytes()
    # batches as the walker hands them over (bytes of one batch each)
    batches = []
    pos = 0
    while pos + 61 <= len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big")
        chunk = data[pos:pos + 12 + length]
        batches.append((chunk, decode_batch(chunk, 0, "x", base=pos, records=False)))
        pos += 12 + length
    fast = B.decode_records
    bare = stripped_decode_records()
    n = sum(b.record_count for _, b in batches)

    def run(fn):
        t = time.process_time()
        for chunk, b in batches:
            fn(chunk, 61, len(chunk), b, "file", b.position, None)
        return time.process_time() - t

    a = [r.__getstate__() if hasattr(r, "__getstate__") else (r.offset, r.key, r.value)
         for r in fast(batches[0][0], 61, len(batches[0][0]), batches[0][1], "file", 0, None)[0]]
    z = [r.__getstate__() if hasattr(r, "__getstate__") else (r.offset, r.key, r.value)
         for r in bare(batches[0][0], 61, len(batches[0][0]), batches[0][1], "file", 0, None)[0]]
    assert a == z, "the stripped loop decodes differently"
    times = {"with span hooks": [], "without": []}
    for _ in range(args.rounds):
        times["with span hooks"].append(run(fast))
        times["without"].append(run(bare))
    best = {k: min(v) for k, v in times.items()}
    print(f"records decoded per run: {n:,} ({len(batches):,} batches, {len(data) / 1e6:.0f} MB)")
    for k, v in best.items():
        print(f"  {k:<16} {v:.3f} s cpu  {v / n * 1e9:.0f} ns/record   (runs: {', '.join(f'{x:.3f}' for x in times[k])})")
    over = (best["with span hooks"] / best["without"] - 1) * 100
    print(f"span-recording overhead on the fast path: {over:+.1f} % (target < 5 %)")


if __name__ == "__main__":
    main()
