"""Protobuf payloads: the schema's ``.proto`` text compiled at run time, the message read by protobuf.

The ``.proto`` text (and the texts its imports name, from the schema's
references or from files of that name in the store) is written to a private
temporary directory and compiled by the protoc that grpcio-tools bundles
(no network, no separate install), in this process as a library (``get_protos``: a few milliseconds a
schema, its errors an exception), into FileDescriptorProtos read from the modules it generates
(with ``ast``, never run); Google's well-known types come from the include directory grpcio-tools ships.  The
set is loaded into a fresh ``DescriptorPool`` per schema (two versions of
one ``.proto`` never meet), and a payload is parsed by the message class of
the message the framing's indexes name::

    message_indexes  [i]     the i-th top-level message of the file
                     [i, j]  the j-th nested message of that one, ...
                     None    the first message ([0])

A schema text may also be a base64 ``FileDescriptorProto`` (what Confluent's
Python serializer registers, and the registry's ``format=serialized``): it is
used as it is, its imports found the same way (Google's well-known files from
the protobuf runtime).  ``confluent/meta.proto`` and ``confluent/type/decimal.proto``,
which the registry knows without a reference, are built in.

The value is protobuf's JSON mapping with the ``.proto``'s field names and
every field shown (64-bit integers as strings, bytes as base64, enums by
name), as ``json_format`` writes it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from kafkadump.decoders.payloads.model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from kafkadump.decoders.payloads.store import SchemaStore

MAIN_FILE = "kafkadump_schema.proto"
MAX_FILES = 1000
# the files Schema Registry knows without a reference (its Protobuf provider ships them): field metadata
# and the decimal type, written from their descriptors (field names and numbers as the registry has them)
BUILTIN_IMPORTS = {
    "confluent/meta.proto": """syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option go_package = "../confluent";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
""",
    "confluent/type/decimal.proto": """syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
""",
}
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_IMPORT = re.compile(r'(?:^|(?<=;))\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


def require() -> None:
    """Raise ImportError when protobuf or grpcio-tools is not installed."""
    import google.protobuf  # noqa: F401
    from grpc_tools import protoc  # noqa: F401


def compile_schema(schema: Schema, store: SchemaStore, limits: PayloadLimits, validate: bool = False
                   ) -> ProtobufCodec:
    """``schema`` compiled to descriptors.  Raises SchemaProblem with protoc's first error line."""
    from google.protobuf import descriptor_pool

    protos = _file_protos(schema, store, MAIN_FILE, 0)
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for fdp in protos:
        if fdp.name not in added:
            added.add(fdp.name)
            pool.Add(fdp)
    return ProtobufCodec(pool.FindFileByName(protos[-1].name), limits)


def serialized_descriptor(text: str) -> Any:
    """The FileDescriptorProto a schema text holds in base64 (what Confluent's Python serializer
    registers, and ``?format=serialized`` returns), or None when the text is .proto source."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    compact = "".join(text.split())
    if not compact or not _BASE64.fullmatch(compact):
        return None
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(compact, validate=True))
    except (ValueError, DecodeError):
        return None
    return fdp if fdp.name or fdp.message_type else None


def _file_protos(schema: Schema, store: SchemaStore, name: str, depth: int) -> list[Any]:
    """The FileDescriptorProtos of ``schema`` (under import ``name``) and everything it imports, imports first."""
    if depth > 64:
        raise SchemaProblem("imports nested deeper than 64")
    fdp = serialized_descriptor(schema.text)
    if fdp is None:
        return _compile_text(schema, store, name)
    named = {ref.name: store.resolve(ref) for ref in schema.references}
    out: list[Any] = []
    for dep in fdp.dependency:
        found = named.get(dep) or store.by_name.get(dep) or store.by_name.get(PurePosixPath(dep).name)
        if found is None and dep in BUILTIN_IMPORTS:
            found = Schema(None, "PROTOBUF", BUILTIN_IMPORTS[dep], source="built in")
        if found is not None:
            out += _file_protos(found, store, dep, depth + 1)
        elif dep.startswith("google/protobuf/"):
            out.append(_well_known(dep))
        else:
            raise SchemaProblem(f"the import {dep[:80]!r} is in no reference and no loaded file")
    if depth and fdp.name != name:
        fdp.name = name
    return out + [fdp]


def _well_known(name: str) -> Any:
    """Google's well-known .proto file ``name`` as the protobuf runtime knows it."""
    from google.protobuf import (  # noqa: F401 - importing them puts their files in the default pool
        any_pb2,
        api_pb2,
        descriptor_pb2,
        descriptor_pool,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        source_context_pb2,
        struct_pb2,
        timestamp_pb2,
        type_pb2,
        wrappers_pb2,
    )

    try:
        fd = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        raise SchemaProblem(f"the import {name[:80]!r} is not a well-known type") from None
    fdp = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(fdp)
    return fdp


def _compile_text(schema: Schema, store: SchemaStore, name: str) -> list[Any]:
    """.proto source compiled by protoc (with its imports) to FileDescriptorProtos, ``name`` last."""
    from google.protobuf import descriptor_pb2

    files = _sources(schema, store, name)
    with tempfile.TemporaryDirectory(prefix="kafkadump-proto-") as tmp:
        root = Path(tmp)
        for file_name, text in files.items():
            target = root / "src" / file_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        generated = _protoc(root, name)
    return [descriptor_pb2.FileDescriptorProto.FromString(_serialized_file(code)) for code in generated]


def _safe_name(name: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or "\\" in name or "\x00" in name:
        raise SchemaProblem(f"the import name {name[:80]!r} is not a relative .proto path")
    return str(p)


def _sources(schema: Schema, store: SchemaStore, main: str) -> dict[str, str]:
    """The main .proto text and every text its imports reach, by import name."""
    files = {_safe_name(main): schema.text}
    todo = [schema]
    while todo:
        current = todo.pop()
        named = {ref.name: store.resolve(ref) for ref in current.references}
        for name in _IMPORT.findall(current.text):
            if name in files or name.startswith("google/protobuf/"):
                continue
            found = named.get(name) or store.by_name.get(name) or store.by_name.get(PurePosixPath(name).name)
            if found is None and name in BUILTIN_IMPORTS:
                found = Schema(None, "PROTOBUF", BUILTIN_IMPORTS[name], source="built in")
            if found is None:
                raise SchemaProblem(f"the import {name[:80]!r} is in no reference and no loaded file")
            files[_safe_name(name)] = found.text
            if len(files) > MAX_FILES:
                raise SchemaProblem(f"more than {MAX_FILES} imported files")
            todo.append(found)
    return files


def _protoc(root: Path, main: str) -> list[bytes]:
    """The Python modules protoc generates for ``main`` and its imports (imports first), protoc run in this
    process as the library grpcio-tools wraps (a few milliseconds a schema, where a child process took a
    second): its errors come back as an exception, never printed; the first is the reason."""
    import warnings

    import grpc_tools
    from grpc_tools import _protoc_compiler  # the compiler behind grpc_tools.protoc and grpc.protos

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    try:
        with warnings.catch_warnings(), _stderr_silenced():
            warnings.simplefilter("ignore")
            files = _protoc_compiler.get_protos(main.encode("utf-8"), [str(root / "src").encode(), include.encode()])
    except _protoc_compiler.ProtocErrors as e:
        first = next(iter(e.errors()), None)
        if first is None:
            raise SchemaProblem("protoc failed without a reason") from None
        where = f"{first.filename.decode('utf-8', 'replace')}:{first.line}:{first.column}"
        raise SchemaProblem(f"{where}: {first.message.decode('utf-8', 'replace')}"[:200]) from None
    return [code for _, code in files]


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 pointed at the null device while protoc runs: its C++ logging (a file without a
    syntax line, ...) writes there directly, and a payload decoder never prints."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _serialized_file(code: bytes) -> bytes:
    """The serialized FileDescriptorProto in a module protoc generated (the argument of its
    ``AddSerializedFile`` call), read with ``ast`` (the module is never run)."""
    import ast

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "AddSerializedFile" and node.args:
            value = ast.literal_eval(node.args[0])
            if isinstance(value, bytes):
                return value
    raise SchemaProblem("protoc generated no file descriptor")


class ProtobufCodec:
    """The descriptors of one compiled schema: parses payloads by message indexes."""

    def __init__(self, file_descriptor: Any, limits: PayloadLimits):
        self.file = file_descriptor
        self.limits = limits
        self._classes: dict[tuple[int, ...], Any] = {}

    def message_descriptor(self, indexes: tuple[int, ...]) -> Any:
        """The message the indexes name (SchemaProblem when they name none)."""
        choices = list(self.file.message_types_by_name.values())
        desc = None
        for depth, i in enumerate(indexes):
            if not 0 <= i < len(choices):
                raise SchemaProblem(f"message index {i} at depth {depth} names no message "
                                    f"({len(choices)} there)")
            desc = choices[i]
            choices = list(desc.nested_types)
        if desc is None:
            raise SchemaProblem("no message index")
        return desc

    def decode(self, data: bytes, message_indexes: tuple[int, ...] | None = None) -> DecodedPayload:
        from google.protobuf import json_format, message_factory
        from google.protobuf.message import DecodeError

        indexes = message_indexes or (0,)
        try:
            desc = self.message_descriptor(indexes)
        except SchemaProblem as e:
            return DecodedPayload(error=str(e))
        cls = self._classes.get(indexes)
        if cls is None:
            cls = self._classes[indexes] = message_factory.GetMessageClass(desc)
        message = cls()
        try:
            message.ParseFromString(data)
        except DecodeError as e:
            return DecodedPayload(error=f"not a {desc.full_name} message: {str(e)[:160]}", message=desc.full_name)
        too_many = _beyond_limits(message, self.limits)  # every message: a few empty ones may print many fields
        if too_many:
            return DecodedPayload(error=too_many, message=desc.full_name)
        value = json_format.MessageToDict(message, preserving_proto_field_name=True,
                                          always_print_fields_with_no_presence=True)
        return DecodedPayload(value=value, message=desc.full_name)


def _repeated(field: Any) -> bool:
    """A repeated (or map) field: ``is_repeated`` in protobuf 6 and later, ``label`` before."""
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == 3  # LABEL_REPEATED


def _beyond_limits(message: Any, limits: PayloadLimits) -> str | None:
    """Why a parsed message holds more repeated and map entries and fields (every field of every message is
    shown, set or not), or nests deeper, than ``limits`` allow, or None (checked before it becomes JSON: a
    packed repeated bool is one byte an item, an empty message in a repeated field two bytes)."""
    todo = [(message, 0)]
    items = fields = 0
    while todo:
        m, depth = todo.pop()
        if depth > limits.max_depth:
            return f"nested deeper than the limit ({limits.max_depth})"
        fields += len(m.DESCRIPTOR.fields)  # every field is shown, set or not
        if fields > limits.max_items:
            return f"more than {limits.max_items} fields shown"
        for field, value in m.ListFields():
            if _repeated(field):
                items += len(value)
                if items > limits.max_items:
                    return f"more than {limits.max_items} repeated items"
                entry = field.message_type
                if entry is not None and entry.GetOptions().map_entry:
                    if entry.fields_by_name["value"].message_type is not None:
                        todo.extend((v, depth + 1) for v in value.values())
                elif entry is not None:
                    todo.extend((v, depth + 1) for v in value)
            elif field.message_type is not None:
                todo.append((value, depth + 1))
    return None


__all__ = ["require", "compile_schema", "ProtobufCodec", "MAIN_FILE"]
