"""Fuzzing of every input path, bounded to fit the normal test run.

* ``test_atheris_short_run``: coverage-guided (atheris/libFuzzer), a fixed
  number of inputs per target from a fixed libFuzzer seed, starting from the
  fixtures and the shared corpus (fuzz/seeds.py): the same inputs on every
  run, so it cannot fail by chance.  Skipped when atheris is not installed;
  the long random hunts are ``python fuzz/run_all.py --seconds 600``
  (fuzz/README.md).
* ``test_hypothesis_*``: the same targets under hypothesis (random bytes and
  mutated seeds), which runs whether or not atheris is installed.
Every input a fuzzer ever crashed on is a test in test_fuzz_regressions.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
sys.path.insert(0, str(FUZZ))

import seeds as S  # noqa: E402
import targets as T  # noqa: E402

# decoder-level targets run hundreds of inputs a second; the CLI-level ones tens
FAST = {"segment", "records", "legacy", "compression", "internal"}
RUNS_FAST = int(os.environ.get("KAFKADUMP_FUZZ_RUNS", "600"))
RUNS_CLI = int(os.environ.get("KAFKADUMP_FUZZ_CLI_RUNS", "150"))
SEED = 1


def test_every_input_path_has_a_target():
    from run import NAMES

    assert set(NAMES) == set(T.TARGETS) == set(S.SOURCES)


def test_atheris_short_run(tmp_path):
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris); "
                                          "the hypothesis fuzzing below still runs")
    cli_targets = ",".join(sorted(set(T.TARGETS) - FAST))
    r = subprocess.run([sys.executable, str(FUZZ / "run_all.py"), "--runs", str(RUNS_FAST), "--seed", str(SEED),
                        "--cli-runs", str(RUNS_CLI), "--cli-targets", cli_targets,
                        "--jobs", "2", "--artifacts", str(tmp_path)], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr[-5000:]
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "input path" not in line]
    assert len(rows) == len(T.TARGETS)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = RUNS_FAST if cells[0] in FAST else RUNS_CLI
        # exactly the fixed number of inputs (more only when the seeds alone outnumber it)
        assert int(cells[2]) >= expected and cells[3] == "ok", row


def _seeds(name, limit=12):
    return [s for s in S.seeds(name)][:limit]


def _mutated(name):
    base = _seeds(name) or [b""]
    return st.tuples(st.sampled_from(base), st.integers(0, 1 << 16), st.binary(max_size=16),
                     st.integers(0, 3)).map(lambda t: _mutate(*t))


def _mutate(seed: bytes, at: int, junk: bytes, how: int) -> bytes:
    if not seed:
        return junk
    i = at % (len(seed) + 1)
    if how == 0:
        return seed[:i] + junk + seed[i + len(junk):]   # overwrite
    if how == 1:
        return seed[:i] + junk + seed[i:]               # insert
    if how == 2:
        return seed[:i]                                  # cut
    return seed[:i] + seed[i + len(junk) + 1:]          # delete


def _settings(name):
    return settings(max_examples=150 if name in FAST else 25, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_hypothesis_random_bytes(name):
    @_settings(name)
    @given(st.binary(max_size=4096))
    def run(data):
        T.TARGETS[name](data)

    run()


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_hypothesis_mutated_seeds(name):
    @_settings(name)
    @given(_mutated(name))
    def run(data):
        T.TARGETS[name](data)

    run()
