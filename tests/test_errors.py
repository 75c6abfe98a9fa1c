"""One exception root for usage and input errors (exit 2), outside the file-mapping module."""

from __future__ import annotations

import pytest

from kafkadump.base import errors
from kafkadump.sources import hextext, pcap, segment
from kafkadump.spark import session, splits


def test_input_errors_share_the_root():
    for cls in (hextext.HexError, pcap.CaptureError, splits.ListingError):
        assert issubclass(cls, errors.InputError)
        assert issubclass(cls, errors.KafkadumpError)
    assert issubclass(errors.UsageError, errors.KafkadumpError)
    assert issubclass(session.SparkUnavailable, errors.KafkadumpError)


def test_every_kafkadump_error_is_exit_2_with_one_line():
    import typer

    from kafkadump.cli.typer_main import run_command

    for cls in (errors.InputError, errors.UsageError, splits.ListingError, session.SparkUnavailable):
        def body(cls=cls):
            raise cls("x.log: something is wrong")

        with pytest.raises(typer.Exit) as e:
            run_command(body)
        assert e.value.exit_code == 2


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(errors.InputError, match="no such file"):
        segment.open_segment(str(tmp_path / "absent.log"))


def test_listing_error_is_an_input_error(tmp_path):
    with pytest.raises(errors.KafkadumpError, match="no such file or directory"):
        splits.list_local([str(tmp_path / "absent")])
