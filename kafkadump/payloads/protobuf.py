"""Protobuf payloads: the schema's ``.proto`` text compiled at run time, the message read by protobuf.

The ``.proto`` text (and the texts its imports name, from the schema's
references or from files of that name in the store) is written to a private
temporary directory and compiled by the protoc that grpcio-tools bundles
(no network, no separate install) into a ``FileDescriptorSet``; Google's
well-known types come from the include directory grpcio-tools ships.  The
set is loaded into a fresh ``DescriptorPool`` per schema (two versions of
one ``.proto`` never meet), and a payload is parsed by the message class of
the message the framing's indexes name::

    message_indexes  [i]     the i-th top-level message of the file
                     [i, j]  the j-th nested message of that one, ...
                     None    the first message ([0])

The value is protobuf's JSON mapping with the ``.proto``'s field names and
every field shown (64-bit integers as strings, bytes as base64, enums by
name), as ``json_format`` writes it.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from .model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from .store import SchemaStore

MAIN_FILE = "kafkadump_schema.proto"
MAX_FILES = 1000
_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


def require() -> None:
    """Raise ImportError when protobuf or grpcio-tools is not installed."""
    import google.protobuf  # noqa: F401
    from grpc_tools import protoc  # noqa: F401


def compile_schema(schema: Schema, store: SchemaStore, limits: PayloadLimits, validate: bool = False
                   ) -> ProtobufCodec:
    """``schema`` compiled to descriptors.  Raises SchemaProblem with protoc's first error line."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    files = _sources(schema, store)
    with tempfile.TemporaryDirectory(prefix="kafkadump-proto-") as tmp:
        root = Path(tmp)
        for name, text in files.items():
            target = root / "src" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        out = root / "set.pb"
        _protoc(root, out)
        file_set = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for fdp in file_set.file:
        pool.Add(fdp)
    return ProtobufCodec(pool.FindFileByName(MAIN_FILE), limits)


def _safe_name(name: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or "\\" in name or "\x00" in name:
        raise SchemaProblem(f"the import name {name[:80]!r} is not a relative .proto path")
    return str(p)


def _sources(schema: Schema, store: SchemaStore) -> dict[str, str]:
    """The main .proto text and every text its imports reach, by import name."""
    files = {MAIN_FILE: schema.text}
    todo = [schema]
    while todo:
        current = todo.pop()
        named = {ref.name: store.resolve(ref) for ref in current.references}
        for name in _IMPORT.findall(current.text):
            if name in files or name.startswith("google/protobuf/"):
                continue
            found = named.get(name) or store.by_name.get(name) or store.by_name.get(PurePosixPath(name).name)
            if found is None:
                raise SchemaProblem(f"the import {name[:80]!r} is in no reference and no loaded file")
            files[_safe_name(name)] = found.text
            if len(files) > MAX_FILES:
                raise SchemaProblem(f"more than {MAX_FILES} imported files")
            todo.append(found)
    return files


def _protoc(root: Path, out: Path) -> None:
    """Run the bundled protoc on MAIN_FILE; its messages (fd 2) are caught, never printed."""
    import grpc_tools
    from grpc_tools import protoc

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{root / 'src'}", f"-I{include}", f"--descriptor_set_out={out}", "--include_imports",
            MAIN_FILE]
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            code = protoc.main(args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        message = err.read(4096).decode("utf-8", "replace")
    if code != 0:
        first = next((line for line in message.splitlines() if line.strip()), f"protoc exit status {code}")
        raise SchemaProblem(first.replace(str(root / "src") + "/", "")[:200])


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
        value = json_format.MessageToDict(message, preserving_proto_field_name=True,
                                          always_print_fields_with_no_presence=True)
        return DecodedPayload(value=value, message=desc.full_name)


__all__ = ["require", "compile_schema", "ProtobufCodec", "MAIN_FILE"]
