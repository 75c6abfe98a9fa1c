"""``--where EXPR``: a small, safe expression language over a record's JSON object (no ``eval``).

Grammar (keywords are lower case)::

    expr     := or
    or       := and ("or" and)*
    and      := not ("and" not)*
    not      := "not" not | compare
    compare  := operand (OP operand)?        OP: == != < <= > >= contains startswith endswith
    operand  := path | literal | "(" expr ")"
    path     := NAME ("." (NAME | INTEGER) | "[" (INTEGER | STRING) "]")*
    literal  := STRING ('...' or "...", JSON escapes) | NUMBER | true | false | null

A path walks the record object: ``offset``, ``timestamp``, ``headers.trace-id`` (the value of
the last header of that name), ``key`` and ``value`` (the decoded payload when one was decoded,
else the raw field), ``key.user.id``, ``value.items[0]``.  A path that leads nowhere is null.
Comparisons are strict about types: a number equals only a number, a string only a string; ``<``
and friends compare two numbers or two strings and are false otherwise.  ``contains`` is substring
for strings, membership for lists and objects.  An operand alone is true when it is neither null
nor false.  Depth and length are bounded: the expression is the user's, the record the evidence's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from kafkadump.base.errors import UsageError
from kafkadump.base.values import FrozenValue

MAX_EXPRESSION = 4096   # characters
MAX_NESTING = 64        # parentheses and "not"s

Predicate = Callable[[dict[str, Any]], Any]

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<punct>[().\[\]])
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_\-]*)
""", re.VERBOSE)
_WORD_OPS = {"contains", "startswith", "endswith"}
_KEYWORDS = {"and", "or", "not", "true", "false", "null"} | _WORD_OPS
_MISSING = None


class WhereError(UsageError):
    """A ``--where`` expression that does not parse: exit 2, with the column."""

    def __init__(self, text: str, pos: int, message: str):
        super().__init__(f"--where: column {pos + 1}: {message}: {text!r}")
        self.pos = pos


class Token(FrozenValue):
    __match_args__ = ("kind", "text", "pos")
    __slots__ = __match_args__

    kind: str   # op, punct, string, number, name, end
    text: str
    pos: int

    def __init__(self, kind: str, text: str, pos: int) -> None:
        self._set(kind=kind, text=text, pos=pos)


def tokens(text: str) -> list[Token]:
    """The tokens of ``text``; a character that starts none is a :class:`WhereError`."""
    if len(text) > MAX_EXPRESSION:
        raise WhereError(text[:40] + "...", MAX_EXPRESSION, f"longer than {MAX_EXPRESSION} characters")
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise WhereError(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(Token(kind, m.group(), pos))
        pos = m.end()
    out.append(Token("end", "", len(text)))
    return out


def _string_literal(tok: Token, text: str) -> str:
    body = tok.text[1:-1]
    if tok.text[0] == "'":
        body = body.replace('\\\'', "'").replace('"', '\\"')
    try:
        value = json.loads('"' + body + '"')
    except ValueError:
        raise WhereError(text, tok.pos, "a string with a bad escape") from None
    return str(value)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokens(text)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def fail(self, message: str) -> WhereError:
        return WhereError(self.text, self.tok.pos, message)

    def take(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at_word(self, word: str) -> bool:
        return self.tok.kind == "name" and self.tok.text == word

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"nested deeper than {MAX_NESTING}")

    def parse(self) -> Predicate:
        if self.tok.kind == "end":
            raise self.fail("an empty expression")
        pred = self.or_()
        if self.tok.kind != "end":
            raise self.fail(f"unexpected {self.tok.text!r}")
        return pred

    def or_(self) -> Predicate:
        parts = [self.and_()]
        while self.at_word("or"):
            self.take()
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else (lambda rec: any(_truthy(p(rec)) for p in parts))

    def and_(self) -> Predicate:
        parts = [self.not_()]
        while self.at_word("and"):
            self.take()
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else (lambda rec: all(_truthy(p(rec)) for p in parts))

    def not_(self) -> Predicate:
        if self.at_word("not"):
            self.take()
            self.deeper()
            inner = self.not_()
            self.depth -= 1
            return lambda rec: not _truthy(inner(rec))
        return self.compare()

    def compare(self) -> Predicate:
        left = self.operand()
        tok = self.tok
        if tok.kind == "op" or (tok.kind == "name" and tok.text in _WORD_OPS):
            self.take()
            right = self.operand()
            test = _COMPARE[tok.text]
            return lambda rec: test(left(rec), right(rec))
        return left

    def operand(self) -> Predicate:
        tok = self.tok
        if tok.kind == "punct" and tok.text == "(":
            self.take()
            self.deeper()
            inner = self.or_()
            self.depth -= 1
            if not (self.tok.kind == "punct" and self.tok.text == ")"):
                raise self.fail("expected ')'")
            self.take()
            return inner
        if tok.kind == "string":
            self.take()
            return _constant(_string_literal(tok, self.text))
        if tok.kind == "number":
            self.take()
            return _constant(_number(tok.text))
        if tok.kind == "name":
            if tok.text in ("true", "false", "null"):
                self.take()
                return _constant({"true": True, "false": False, "null": None}[tok.text])
            if tok.text in _KEYWORDS:
                raise self.fail(f"expected a path or a value, not {tok.text!r}")
            return self.path()
        raise self.fail("expected a path or a value" if tok.kind != "end" else "the expression ends too early")

    def path(self) -> Predicate:
        steps: list[str | int] = [self.take().text]
        while self.tok.kind == "punct" and self.tok.text in ".[":
            if self.take().text == ".":
                t = self.take()
                if t.kind == "name":
                    steps.append(t.text)
                elif t.kind == "number" and t.text.isdigit():
                    steps.append(int(t.text))
                else:
                    self.i -= 1
                    raise self.fail("expected a field name after '.'")
            else:
                t = self.take()
                if t.kind == "number" and t.text.lstrip("-").isdigit():
                    steps.append(int(t.text))
                elif t.kind == "string":
                    steps.append(_string_literal(t, self.text))
                else:
                    self.i -= 1
                    raise self.fail("expected an index or a quoted name in '[...]'")
                if not (self.tok.kind == "punct" and self.tok.text == "]"):
                    raise self.fail("expected ']'")
                self.take()
        frozen = tuple(steps)
        return lambda rec: resolve(rec, frozen)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _constant(value: Any) -> Predicate:
    return lambda rec: value


def _truthy(v: Any) -> bool:
    return v is not None and v is not False


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _ordered(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return test(a, b)
        return False
    return compare


def _contains(a: Any, b: Any) -> bool:
    if isinstance(a, str):
        return isinstance(b, str) and b in a
    if isinstance(a, list):
        return any(_equal(x, b) for x in a)
    if isinstance(a, dict):
        return isinstance(b, str) and b in a
    return False


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": _ordered(lambda a, b: a < b),
    "<=": _ordered(lambda a, b: a <= b),
    ">": _ordered(lambda a, b: a > b),
    ">=": _ordered(lambda a, b: a >= b),
    "contains": _contains,
    "startswith": lambda a, b: isinstance(a, str) and isinstance(b, str) and a.startswith(b),
    "endswith": lambda a, b: isinstance(a, str) and isinstance(b, str) and a.endswith(b),
}


def _first_step(rec: dict[str, Any], name: str) -> Any:
    """``key``/``value`` are the decoded payload when there is one; ``headers`` an object by name."""
    if name in ("key", "value"):
        payload = rec.get(name + "Payload")
        if isinstance(payload, dict) and "decoded" in payload:
            return payload["decoded"]
        return rec.get(name)
    if name == "headers":
        hdrs = rec.get("headers")
        if isinstance(hdrs, list):
            return {h.get("key"): h.get("value") for h in hdrs if isinstance(h, dict)}
    return rec.get(name, _MISSING)


def resolve(rec: dict[str, Any], steps: tuple[str | int, ...]) -> Any:
    """The value at ``steps`` in the record object ``rec``; null when the path leads nowhere."""
    cur = _first_step(rec, str(steps[0]))
    for step in steps[1:]:
        if isinstance(cur, dict) and isinstance(step, str):
            cur = cur.get(step, _MISSING)
        elif isinstance(cur, dict) and isinstance(step, int):
            cur = cur.get(str(step), _MISSING)
        elif isinstance(cur, list) and isinstance(step, int) and -len(cur) <= step < len(cur):
            cur = cur[step]
        else:
            return _MISSING
    return cur


class Where(FrozenValue):
    """A parsed ``--where`` expression: ``matches(record_object)``."""

    __match_args__ = ("text", "predicate")
    __slots__ = __match_args__

    text: str
    predicate: Predicate

    def __init__(self, text: str, predicate: Predicate) -> None:
        self._set(text=text, predicate=predicate)

    def matches(self, record: dict[str, Any]) -> bool:
        return _truthy(self.predicate(record))


def parse_where(text: str) -> Where:
    """``text`` as a :class:`Where`; a :class:`WhereError` (a usage error, exit 2) naming the column."""
    return Where(text, _Parser(text).parse())


__all__ = ["Where", "WhereError", "parse_where", "resolve", "tokens", "MAX_EXPRESSION", "MAX_NESTING"]
