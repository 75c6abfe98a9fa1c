#!/usr/bin/env python3
"""Coverage-guided fuzzing of one kafkadump input path with atheris (libFuzzer).

    python fuzz/run.py TARGET [libFuzzer flags...]     e.g. -max_total_time=600
    python fuzz/run.py --list

The seeds (fixtures and the shared corpus, read in place, see seeds.py) are
written, shaped for the target, into a fresh working corpus directory under
the system temp dir (``--corpus DIR`` to keep one between runs); nothing is
written next to the fixtures or the corpus.  A crash leaves a
``crash-*`` file in the current directory (libFuzzer's ``-artifact_prefix``):
turn it into a regression test in tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


NAMES = ("segment", "records", "legacy", "compression", "index", "snapshot", "checkpoint", "carve",
         "hextext", "pcap", "protocol", "internal", "forensics", "avro", "protobuf", "jsonschema", "schemas")


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    if argv[0] == "--list":
        import targets

        print("\n".join(targets.TARGETS))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in NAMES:
        print(f"run.py: unknown target {name!r}; one of {', '.join(NAMES)}", file=sys.stderr)
        return 2
    keep = None
    if "--corpus" in rest:
        i = rest.index("--corpus")
        keep = rest[i + 1]
        del rest[i:i + 2]
    import atheris

    with atheris.instrument_imports(include=["kafkadump"]):
        import targets

        import kafkadump.cli  # noqa: F401  (instrument the package before the targets use it)
        kafkadump.cli.load_all_commands()  # the command modules load on first use: instrument them all here
        import kafkadump.cli.capture_command  # noqa: F401
        import kafkadump.cli.logdir_commands  # noqa: F401
        import kafkadump.decoders.batches.batch  # noqa: F401
        import kafkadump.decoders.batches.compression  # noqa: F401
        import kafkadump.decoders.batches.legacy  # noqa: F401
        import kafkadump.decoders.batches.walk  # noqa: F401
        import kafkadump.decoders.internal_topics.record_decoder  # noqa: F401
        import kafkadump.reports.dump  # noqa: F401
        import kafkadump.decoders.payloads.avro  # noqa: F401
        import kafkadump.decoders.payloads.json_schema  # noqa: F401
        import kafkadump.decoders.payloads.protobuf  # noqa: F401
        import kafkadump.decoders.payloads.schemas_topic  # noqa: F401
        import kafkadump.decoders.payloads.store  # noqa: F401
        import kafkadump.decoders.protocol.stream  # noqa: F401
        import kafkadump.reports.segments  # noqa: F401
        import kafkadump.sources.hextext  # noqa: F401
        import kafkadump.sources.pcap  # noqa: F401

    corpus = keep or tempfile.mkdtemp(prefix=f"kafkadump-fuzz-{name}-")
    os.makedirs(corpus, exist_ok=True)
    import seeds

    for s in seeds.seeds(name):
        with open(os.path.join(corpus, hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)
    fn = targets.TARGETS[name]
    args = [sys.argv[0], *rest, corpus]
    if not any(a.startswith("-max_len") for a in rest):
        args.insert(1, f"-max_len={seeds.MAX_SEED}")
    if not any(a.startswith("-rss_limit_mb") for a in rest):
        args.insert(1, "-rss_limit_mb=1024")
    try:
        atheris.Setup(args, fn)
        atheris.Fuzz()
    finally:  # pragma: no cover - Fuzz() exits the process
        if keep is None:
            shutil.rmtree(corpus, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
