"""--where: the expression language over record objects, its errors (exit 2 with the column)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkadump.base.errors import UsageError
from kafkadump.decoders.payloads.where import WhereError
from kafkadump.decoders.payloads.where import parse_where

RAW = {"type": "record", "offset": 7, "timestamp": 1700000000000, "key": "user-42", "value": {"base64": "AAE="},
       "headers": [{"key": "trace-id", "value": "abc"}, {"key": "n", "value": None}], "control": None}
DECODED = dict(RAW, valuePayload={"format": "avro", "schemaId": 3,
                                  "decoded": {"user": {"id": "42", "age": 30, "tags": ["a", "b"]}, "ok": True}})


@pytest.mark.parametrize(("expr", "raw", "decoded"), [
    ('value.user.id == "42"', False, True),
    ("value.user.id == 42", False, False),           # strict types: a string is not a number
    ("value.user.age >= 30 and value.user.age < 31", False, True),
    ("value.user.age > 29.5", False, True),
    ("key == 'user-42'", True, True),
    ('key startswith "user-" and not key endswith "1"', True, True),
    ("offset == 7 or offset == 8", True, True),
    ("(offset == 8 or offset == 7) and timestamp > 0", True, True),
    ('headers.trace-id == "abc"', True, True),
    ("headers.n == null", True, True),
    ("headers.missing == null", True, True),
    ('value.user.tags contains "b"', False, True),
    ("value.user.tags[1] == 'b' and value.user.tags.0 == 'a'", False, True),
    ("value.user.tags[-1] == 'b'", False, True),
    ('value["user"]["id"] == "42"', False, True),
    ("value.ok", False, True),
    ("value.nothing.deeper", False, False),
    ("not value.ok", True, False),
    ('value.base64 == "AAE="', True, False),          # raw when nothing was decoded
    ("control == null", True, True),
    ('value.user.id != "42"', True, False),
    ('key contains "r-4"', True, True),
    ('"b" < "c"', True, True),
    ('offset < "8"', False, False),                   # no ordering across types
    ("true and not false", True, True),
])
def test_expressions(expr, raw, decoded):
    w = parse_where(expr)
    assert (w.matches(RAW), w.matches(DECODED)) == (raw, decoded)


@pytest.mark.parametrize(("expr", "column"), [
    ("", 1), ("offset ==", 10), ("offset == 7 and", 16), ("(offset == 7", 13), ("offset = 7", 8),
    ("value.", 7), ("a[x]", 3), ('"unterminated', 1), ("offset == 7 7", 13), ("and", 1), ("a.b[0", 6),
    ("key == 'bad \\q'", 8), ("offset $ 1", 8),
])
def test_parse_errors_name_the_column(expr, column):
    with pytest.raises(WhereError) as e:
        parse_where(expr)
    assert isinstance(e.value, UsageError)
    assert f"column {column}:" in str(e.value)


def test_nesting_is_bounded():
    with pytest.raises(WhereError, match="nested deeper"):
        parse_where("(" * 100 + "true" + ")" * 100)
    with pytest.raises(WhereError, match="longer than"):
        parse_where("a == 1 or " * 1000 + "true")
    assert parse_where("not " * 60 + "true").matches({}) is True


@given(st.text(max_size=40))
def test_parsing_never_raises_anything_but_a_usage_error(text):
    try:
        w = parse_where(text)
    except WhereError:
        return
    w.matches(DECODED)
