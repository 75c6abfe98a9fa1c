"""kafkadump/base/values.py: the value classes behave as the dataclasses they replace (without their import)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest

from kafkadump.decoders.batches import Options
from kafkadump.decoders.logfiles.names import FileName
from kafkadump.decoders.logfiles.names import PartitionDir
from kafkadump.render.table import Column
from kafkadump.reports.segments import CrcTotals
from kafkadump.reports.segments import FileStart
from kafkadump.reports.segments import RecordsOf


@dataclasses.dataclass(frozen=True)
class _ColumnAsDataclass:
    title: str
    width: int
    right: bool = False
    priority: int = 50
    min_width: int = 0
    name: bool = False
    fold: bool = False


def test_a_frozen_value_is_equal_hashable_and_shown_as_its_dataclass_twin():
    c, twin = Column("key", 24, False, 3, 12), _ColumnAsDataclass("key", 24, False, 3, 12)
    assert repr(c) == repr(twin).replace("_ColumnAsDataclass", "Column") == \
        "Column(title='key', width=24, right=False, priority=3, min_width=12, name=False, fold=False)"
    assert c == Column("key", 24, priority=3, min_width=12) and c != Column("key", 25, priority=3, min_width=12)
    assert hash(c) == hash(Column("key", 24, False, 3, 12)) and len({c, Column("key", 24, False, 3, 12)}) == 1
    assert c != twin and c.__eq__(twin) is NotImplemented  # another class: not equal, as a dataclass
    assert FileName("segment", 5) != PartitionDir("segment", 5, None)


def test_a_frozen_value_refuses_assignment_as_a_frozen_dataclass():
    opt = Options()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opt.records = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del opt.max_depth  # type: ignore[misc]
    assert opt.records is True


def test_replace_makes_a_changed_copy_and_refuses_unknown_fields():
    opt = Options(max_depth=3)
    assert opt.replace(records=False) == Options(records=False, max_depth=3)
    assert opt.replace(records=False) is not opt and opt.records
    with pytest.raises(TypeError, match="no field 'depth'"):
        opt.replace(depth=1)
    start = FileStart("a.log", 2)
    assert start.replace(decoded=True) == FileStart("a.log", 2, True)


def test_a_mutable_value_is_unhashable_and_equal_by_its_fields():
    totals = CrcTotals()
    totals.bad += 1
    assert totals == CrcTotals(bad=1) and totals != CrcTotals()
    assert repr(totals) == "CrcTotals(files=0, batches=0, bytes=0, bad=1, findings=0, valid=True)"
    with pytest.raises(TypeError):
        hash(totals)
    assert RecordsOf(None, []).replace(shown=False).shown is False  # type: ignore[arg-type]


def test_values_pickle_and_copy_as_dataclasses_do():
    opt = Options(max_scan=0, resync_window=4096)
    assert pickle.loads(pickle.dumps(opt)) == opt
    assert copy.copy(opt) == opt and copy.deepcopy(FileName("segment", 7, stem="x")) == FileName("segment", 7, stem="x")
    assert Options(**{**opt.__dict__, "records": False}) == opt.replace(records=False)  # (logdir/scan makes one so)


def test_the_data_commands_modules_create_no_dataclass():
    probe = ("import sys, kafkadump.cli.fast_path, kafkadump.cli.segment_bodies, kafkadump.reports.segments, "
             "kafkadump.render.table, kafkadump.render.jsonl, kafkadump.objects.records, kafkadump.reports.query, "
             "kafkadump.reports.record_window; print('dataclasses' in sys.modules, 'inspect' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["False", "False"], run.stderr
