"""The schema store: every schema kafkadump can decode payloads with, from the evidence or files, never the network.

``SchemaStore.load(paths)`` reads, for each path:

* a ``_schemas`` partition directory (``_schemas-0``), or a log dir holding one
  (:func:`find_schemas_dir`): the registry's own topic, folded by
  :mod:`.schemas_topic` (soft and hard deletions, configs and modes kept);
* a ``_schemas`` segment file (``.log``);
* a registry export: the JSON of ``GET /schemas`` (a list of
  ``{subject, version, id, schemaType, schema, references}``), or one such
  object;
* a directory of ``.avsc`` / ``.proto`` / ``.json`` files, or one such file,
  named by id (``17.avsc``) or by subject (``orders-value.avsc``).

Schemas are found by id or GUID (:meth:`SchemaStore.lookup`), and references
(Avro named types across subjects, Protobuf imports, JSON Schema ``$ref``)
by subject and version or by name (:meth:`SchemaStore.resolve`).  Deleted
schemas stay in the store (flagged): old records were written with them.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kafkadump.base.errors import InputError
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.payloads.model import Registration, Schema, SchemaReference
from kafkadump.decoders.payloads.schemas_topic import (
    HARD,
    SOFT,
    Located,
    SchemasTopic,
    Setting,
    read_schemas_topic,
    segments_of,
)

SCHEMAS_TOPIC = "_schemas"
FILE_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
MAX_SCHEMA_FILE = 64 << 20   # a schema file or export larger than this is refused
MAX_SCHEMA_FILES = 100_000   # files read from one directory
MADE_SCHEMAS = 1024          # schemas of _schemas topics kept made (the rest made again when looked up)


def find_schemas_dir(logdir: Path) -> Path | None:
    """The ``_schemas`` partition directory in (or at) ``logdir``, or None.

    ``logdir`` may also be an input inside a log dir: a partition directory or a segment file (the
    ``_schemas`` partition beside it is found).
    """
    logdir = Path(logdir)
    if _is_schemas_partition(logdir):
        return logdir
    if logdir.is_file():
        logdir = logdir.parent
        if _is_schemas_partition(logdir):
            return logdir
    if names.parse_partition_dir(str(logdir)) is not None:
        found = find_schemas_dir(logdir.parent) if logdir.parent != logdir else None
        if found is not None:
            return found
    try:
        children = sorted(os.listdir(logdir))
    except OSError:
        return None
    for name in children:
        if _is_schemas_partition(logdir / name):
            return logdir / name
    return None


def _is_schemas_partition(path: Path) -> bool:
    parsed = names.parse_partition_dir(str(path))
    return parsed is not None and parsed.topic == SCHEMAS_TOPIC and parsed.state is None and path.is_dir()


class SchemaStore:
    """Schemas by id, GUID, subject and name, with what ``_schemas`` said about them.

    Schema files and exports are held as :class:`Schema` objects; a ``_schemas`` topic is held as its
    compact fold (:class:`SchemasTopic`: a packed int a version, each id's text once), and a schema of it
    is made when it is looked up (the last :data:`MADE_SCHEMAS` kept): memory grows with the texts, not
    with the number of versions, and a lookup costs the registrations of one id.
    """

    def __init__(self) -> None:
        self.files_by_id: dict[int, Schema] = {}   # schemas of files and exports
        self.by_guid: dict[str, Schema] = {}
        self.by_subject_version: dict[tuple[str, int], Schema] = {}
        self.file_names: dict[str, Schema] = {}     # file names and subjects of files named by subject
        self.unnumbered: list[Schema] = []          # schemas from files that name no id
        self.topics: list[SchemasTopic] = []
        self.settings: list[Setting] = []
        self.findings: list[Located] = []
        self.findings_dropped = 0
        self.records = 0
        self.noops = 0
        self.sources: list[str] = []
        self._made: OrderedDict[int, Schema | None] = OrderedDict()

    @property
    def by_id(self) -> Mapping[int, Schema]:
        """Every numbered schema by id (made on access for the ``_schemas`` topics)."""
        return _Ids(self)

    @property
    def by_name(self) -> Mapping[str, Schema]:
        """Schemas by file name, and by subject (a topic's subject: its latest version)."""
        return _Names(self)

    # ---- loading ----------------------------------------------------------------------------------------

    @classmethod
    def load(cls, paths: Iterable[Path | str]) -> SchemaStore:
        """A store of every schema in ``paths``.  Raises InputError (one line) on unreadable input."""
        store = cls()
        for path in map(Path, paths):
            try:
                store._load_path(path)
            except OSError as e:
                raise InputError(f"{path}: cannot read schemas: {e.strerror or e}") from None
        return store

    def _load_path(self, path: Path) -> None:
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_dir():
            partition = find_schemas_dir(path)
            if partition is not None:
                self._add_topic(read_schemas_topic(segments_of(partition)), str(partition))
            else:
                self._load_schema_files(path)
        elif names.classify(path.name).kind == names.SEGMENT:
            self._add_topic(read_schemas_topic([path]), str(path))
        else:
            self._load_file(path, listed=True)
        self.sources.append(str(path))

    def _load_schema_files(self, directory: Path) -> None:
        files = sorted(p for p in directory.iterdir() if p.suffix in FILE_TYPES and p.is_file())
        if not files:
            raise InputError(f"{directory}: holds no _schemas partition and no .avsc, .proto or .json files")
        if len(files) > MAX_SCHEMA_FILES:
            raise InputError(f"{directory}: more than {MAX_SCHEMA_FILES} schema files")
        for p in files:
            self._load_file(p, listed=False)

    def _load_file(self, path: Path, listed: bool) -> None:
        if path.stat().st_size > MAX_SCHEMA_FILE:
            raise InputError(f"{path}: larger than {MAX_SCHEMA_FILE >> 20} MiB: not a schema file")
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text: not a schema file") from None
        if path.suffix in (".json", "") or listed and path.suffix not in FILE_TYPES:
            export = _registry_entries(text)
            if export is not None:
                for entry in export:
                    self._add_export_entry(entry, path)
                return
            if path.suffix not in FILE_TYPES:
                raise InputError(f"{path}: neither a registry export (JSON) nor a .avsc, .proto or .json schema")
        self._add_file_schema(path, text)

    def _add_export_entry(self, entry: dict[str, Any], path: Path) -> None:
        reg: tuple[Registration, ...] = ()
        if isinstance(entry.get("subject"), str) and _is_int(entry.get("version")):
            reg = (Registration(entry["subject"], entry["version"], deleted=entry.get("deleted") is True),)
        self._add(_schema_from_value(entry, reg, str(path)))

    def _add_file_schema(self, path: Path, text: str) -> None:
        stem = path.stem
        schema = Schema(int(stem) if stem.isdigit() else None, FILE_TYPES[path.suffix], text, source=str(path))
        self._add(schema)
        self.file_names.setdefault(path.name, schema)
        if not stem.isdigit():
            self.file_names.setdefault(stem, schema)

    def _add_topic(self, topic: SchemasTopic, where: str) -> None:
        self.topics.append(topic)
        self._made.clear()
        self.settings.extend(topic.settings.values())
        self.findings.extend(topic.findings)
        self.findings_dropped += topic.findings_dropped
        self.records += topic.records
        self.noops += topic.noops

    def _from_topics(self, sid: int) -> Schema | None:
        """The schema of id ``sid`` the topics hold, made from their folds (registrations merged), or None."""
        if sid in self._made:
            self._made.move_to_end(sid)
            return self._made[sid]
        found = None
        for topic in self.topics:
            made = _topic_schema(topic, sid)
            if made is not None:
                found = made if found is None else self._merged(found, made)
        self._made[sid] = found
        if len(self._made) > MADE_SCHEMAS:
            self._made.popitem(last=False)
        return found

    def _add(self, schema: Schema) -> None:
        sid = schema.id
        if sid is None:
            self.unnumbered.append(schema)
        else:
            old = self.files_by_id.get(sid)
            if old is not None:
                schema = self._merged(old, schema)
                self._repoint(old, schema)
            self.files_by_id[sid] = schema
        if schema.guid:
            self.by_guid.setdefault(schema.guid.lower(), schema)
        for r in schema.registrations:
            self.by_subject_version[(r.subject, r.version)] = schema
            self.file_names.setdefault(r.subject, schema)

    @staticmethod
    def _merged(old: Schema, schema: Schema) -> Schema:
        """``schema`` with the registrations of a schema of the same id loaded before (an export lists each)."""
        regs = old.registrations + tuple(r for r in schema.registrations if r not in old.registrations)
        return Schema(old.id, old.schema_type, old.text, old.references, regs, old.guid or schema.guid, old.source)

    def _repoint(self, old: Schema, new: Schema) -> None:
        indexes: tuple[dict[Any, Schema], ...] = (self.by_guid, self.by_subject_version, self.file_names)
        for index in indexes:
            for k, v in list(index.items()):
                if v is old:
                    index[k] = new

    # ---- queries ----------------------------------------------------------------------------------------

    def lookup(self, schema_id: int | None = None, guid: str | None = None) -> Schema | None:
        """The schema with this id (or GUID), or None."""
        if schema_id is not None:
            found = self._by_id(schema_id)
            if found is not None:
                return found
        if guid is not None:
            found = self.by_guid.get(guid.lower())
            if found is not None:
                return found
            for topic in self.topics:
                sid = topic.guids.get(guid.lower())
                if sid is not None:
                    return self._by_id(sid)
        return None

    def _by_id(self, sid: int) -> Schema | None:
        in_file = self.files_by_id.get(sid)
        in_topic = self._from_topics(sid) if self.topics else None
        if in_file is None or in_topic is None:
            return in_file or in_topic
        return self._merged(in_file, in_topic)

    def resolve(self, ref: SchemaReference) -> Schema | None:
        """The schema a reference names: by subject and version (-1: the latest), else by name."""
        for topic in reversed(self.topics):
            versions = topic.versions.get(ref.subject)
            if versions:
                version = max(versions) if ref.version == -1 or ref.version is None else ref.version
                if version in versions:
                    return self._by_id(_version_id(versions[version]))
        if ref.version == -1 or ref.version is None:
            latest = [v for (s, v) in self.by_subject_version if s == ref.subject]
            if latest:
                return self.by_subject_version[(ref.subject, max(latest))]
        found = self.by_subject_version.get((ref.subject, ref.version))
        return found or self.by_name.get(ref.name) or self.by_name.get(ref.subject)

    def ids(self) -> list[int]:
        """Every schema id, sorted."""
        return sorted(set(self.files_by_id).union(*(t.ids for t in self.topics)))

    def iter_schemas(self) -> Iterator[Schema]:
        """Every schema, numbered ones by id first, then the ones files gave no id; made one at a time."""
        for sid in self.ids():
            found = self._by_id(sid)
            if found is not None:
                yield found
        yield from self.unnumbered

    def schemas(self) -> list[Schema]:
        """Every schema, numbered ones by id first, then the ones files gave no id."""
        return list(self.iter_schemas())

    def all_of_type(self, schema_type: str) -> Iterator[Schema]:
        """Every schema of one type (to find an Avro named type no reference names), made one at a time."""
        return (s for s in self.iter_schemas() if s.schema_type == schema_type)

    def schema_types(self) -> tuple[str, ...]:
        """The schema types the store holds (for ``decode.check_payload_libraries``), each once, sorted."""
        types = {s.schema_type for s in self.files_by_id.values()} | {s.schema_type for s in self.unnumbered}
        return tuple(sorted(types.union(*(t.schema_types() for t in self.topics))))

    def __len__(self) -> int:
        return sum(1 for sid in self.ids() if self._by_id(sid) is not None) + len(self.unnumbered)


class _Ids(Mapping[int, Schema]):
    def __init__(self, store: SchemaStore):
        self.store = store

    def __getitem__(self, sid: int) -> Schema:
        found = self.store.lookup(schema_id=sid)
        if found is None:
            raise KeyError(sid)
        return found

    def __iter__(self) -> Iterator[int]:
        return (sid for sid in self.store.ids() if self.store.lookup(schema_id=sid) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Names(Mapping[str, Schema]):
    def __init__(self, store: SchemaStore):
        self.store = store

    def _subject(self, name: str) -> Schema | None:
        for topic in reversed(self.store.topics):
            versions = topic.versions.get(name)
            if versions:
                return self.store.lookup(schema_id=_version_id(versions[max(versions)]))
        return None

    def __getitem__(self, name: str) -> Schema:
        found = self.store.file_names.get(name) or self._subject(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        seen = dict.fromkeys(self.store.file_names)
        for topic in self.store.topics:
            seen.update(dict.fromkeys(topic.versions))
        return iter(seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _version_id(packed: Any) -> int:
    from kafkadump.decoders.payloads.schemas_topic import unpack_version

    return unpack_version(packed)[0]


def _topic_schema(topic: SchemasTopic, sid: int) -> Schema | None:
    """The schema of id ``sid`` made from a topic's fold, or None when no version holds it any more."""
    regs = topic.registrations(sid)
    if not regs:
        return None
    text = topic.ids[sid]
    first = regs[0]
    refs = tuple(SchemaReference(name, subject, version if _is_int(version) else -1)
                 for name, subject, version in text.references)
    registrations = tuple(Registration(s, v, bool(flags & SOFT), bool(flags & HARD)) for s, v, flags, _, _ in regs)
    return Schema(sid, text.schema_type, text.text, refs, registrations, text.guid,
                  f"{topic.files[first[4]]} offset {first[3]}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _registry_entries(text: str) -> list[dict[str, Any]] | None:
    """The entries of a registry export (a list of schema objects, or one), or None when ``text`` is not one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    items = data if isinstance(data, list) else [data]
    if items and all(isinstance(e, dict) and isinstance(e.get("schema"), str) for e in items):
        return items
    return None


def _references(value: dict[str, Any]) -> tuple[SchemaReference, ...]:
    refs = value.get("references")
    if not isinstance(refs, list):
        return ()
    return tuple(SchemaReference(str(r.get("name", "")), str(r.get("subject", "")),
                                 r["version"] if _is_int(r.get("version")) else -1)
                 for r in refs if isinstance(r, dict))


def _schema_from_value(value: dict[str, Any], regs: tuple[Registration, ...], source: str) -> Schema:
    schema_type = value.get("schemaType") or "AVRO"
    guid = value.get("guid")
    return Schema(value["id"] if _is_int(value.get("id")) else None, str(schema_type).upper(), value["schema"],
                  _references(value), regs, guid if isinstance(guid, str) else None, source)


__all__ = ["SchemaStore", "find_schemas_dir", "SCHEMAS_TOPIC", "FILE_TYPES"]
