"""The configuration file and environment: one schema for every table of ``cairn.toml``.

The file is ``$CAIRN_CONFIG`` or ``<data dir>/cairn.toml`` (it may not exist). It has three
tables, each the fields of one attrs class and nothing else:

    [memory]      MemoryConfig (cairn.config): recall, budgets, ingestion, maintenance,
                  retention, storage, timezone. Variables CAIRN_MEMORY_<FIELD>.
    [embedding]   EmbeddingSettings (cairn.providers.settings). CAIRN_EMBEDDING_<FIELD>.
    [text]        TextSettings (cairn.providers.settings). CAIRN_TEXT_<FIELD>.

A table's schema is derived from its class's fields (:func:`table_schema`): there is no
second list of settings to drift from the class. Values are decoded with msgspec against
each field's annotated type, then the field's own attrs validator runs, so a bad value is
a :class:`~cairn.errors.ConfigurationError` naming the key, where it came from (the file
and table, or the variable) and what was expected. An unknown table, an unknown key in a
table and an unknown ``CAIRN_<TABLE>_*`` variable are errors too, naming them.

Precedence, per setting: an explicit argument (``open_memory(path, config)``: the config
given is used whole), then the environment, then the file, then the class's default.
Variables are strings: numbers and ``true``/``false`` are parsed, and ``none`` (or an
empty value) clears a setting that may be unset. The file's values are parsed the same
way, so a quoted number is read as that number.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import msgspec

from cairn.config import MemoryConfig
from cairn.errors import ConfigurationError

__all__ = [
    "DEFAULT_SOURCE",
    "MEMORY_SCHEMA",
    "TABLES",
    "DecodedTable",
    "LoadedMemoryConfig",
    "TableSchema",
    "config_path",
    "decode_table",
    "load_memory_config",
    "read_document",
    "table_schema",
]

# Every table the file may hold; the schema of each is registered by its owner module.
TABLES: Final = ("memory", "embedding", "text")
DEFAULT_SOURCE: Final = "default"


def config_path(data_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """``$CAIRN_CONFIG`` when set, else ``<data dir>/cairn.toml`` (it may not exist)."""
    environ = os.environ if environ is None else environ
    configured = environ.get("CAIRN_CONFIG")
    return Path(configured) if configured else data_dir / "cairn.toml"


def read_document(path: Path) -> dict[str, dict[str, Any]]:
    """The file's tables ({} when there is no file); an unreadable file, a top-level key
    that is not a table, or an unknown table is a ConfigurationError."""
    if not path.is_file():
        return {}
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"{path}: {error}", source=str(path)) from None
    unknown = sorted(set(document) - set(TABLES))
    if unknown:
        raise ConfigurationError(
            f"{path}: unknown {_plural('table', unknown)}"
            f" {', '.join(f'[{name}]' for name in unknown)};"
            f" the tables are {', '.join(f'[{name}]' for name in TABLES)}",
            source=str(path),
        )
    for name, table in document.items():
        if not isinstance(table, dict):
            raise ConfigurationError(
                f"{path}: [{name}] must be a table", source=str(path), key=name
            )
    return document


@attrs.frozen
class TableSchema:
    """One table: its name, the class it configures and that class's settable fields
    with their annotated types."""

    table: str
    target: type
    fields: Mapping[str, attrs.Attribute[Any]]
    types: Mapping[str, Any]

    @property
    def prefix(self) -> str:
        return f"CAIRN_{self.table.upper()}_"

    def variable(self, key: str) -> str:
        return self.prefix + key.upper()

    def default(self, key: str) -> Any:
        # No table field has a factory default (a test holds every default constant).
        return self.fields[key].default


def table_schema(table: str, target: type, exclude: Iterable[str] = ()) -> TableSchema:
    """The schema of ``[table]``: every field of the attrs class ``target`` except
    ``exclude`` (fields that are not configuration, such as a provenance label)."""
    if table not in TABLES:
        raise ValueError(f"[{table}] is not one of the tables {TABLES}")
    hints = typing.get_type_hints(target)
    skipped = set(exclude)
    fields = {
        field.name: field
        for field in attrs.fields(target)
        if field.name not in skipped and field.init
    }
    return TableSchema(table, target, fields, {name: hints[name] for name in fields})


MEMORY_SCHEMA: Final = table_schema("memory", MemoryConfig)


def _plural(word: str, names: list[str]) -> str:
    return word if len(names) == 1 else f"{word}s"


def _optional(kind: Any) -> bool:
    return isinstance(kind, types.UnionType) and type(None) in typing.get_args(kind)


def _expected(kind: Any) -> str:
    """What a value of ``kind`` looks like, for an error message."""
    if _optional(kind):
        inner = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return " or ".join(_expected(arg) for arg in inner) + ", or none"
    names = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
    }
    return names.get(kind, str(kind))


def _suggestion(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


@attrs.frozen
class DecodedTable:
    """The settings one table sets: decoded values, and for each key where it came from
    (``"<file> [table]"`` or the variable's name). Keys left at their default are
    absent from both."""

    values: Mapping[str, Any]
    sources: Mapping[str, str]

    def source_of(self, key: str) -> str:
        return self.sources.get(key, DEFAULT_SOURCE)

    def labels(self) -> list[str]:
        """Each distinct source, in the order they apply (file, then variables)."""
        return list(dict.fromkeys(self.sources.values()))


def _decode_value(schema: TableSchema, key: str, value: object, source: str) -> object:
    kind = schema.types[key]
    if (
        isinstance(value, str)
        and _optional(kind)
        and value.strip().lower() in {"", "none", "null"}
    ):
        value = None
    else:
        try:
            value = msgspec.convert(value, kind, strict=False)
        except msgspec.ValidationError:
            raise ConfigurationError(
                f"{source}: {key} must be {_expected(kind)}, not {value!r}",
                source=source,
                key=key,
            ) from None
    validator = schema.fields[key].validator
    if validator is not None:
        try:
            validator(None, schema.fields[key], value)
        except (ValueError, TypeError) as error:
            message = str(error)
            if key not in message:
                message = f"{key}: {message}"
            if repr(value) not in message and str(value) not in message:
                message += f", not {value!r}"
            raise ConfigurationError(
                f"{source}: {message}", source=source, key=key
            ) from None
    return value


def decode_table(
    schema: TableSchema,
    document: Mapping[str, Mapping[str, Any]],
    path: Path,
    environ: Mapping[str, str],
) -> DecodedTable:
    """``[table]`` of ``document`` (read from ``path``), then its variables over it."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    table = document.get(schema.table, {})
    file_source = f"{path} [{schema.table}]"
    unknown = sorted(set(table) - set(schema.fields))
    if unknown:
        hint = _suggestion(unknown[0], schema.fields) if len(unknown) == 1 else ""
        raise ConfigurationError(
            f"{path}: unknown {_plural('key', unknown)} in [{schema.table}]:"
            f" {', '.join(unknown)}{hint}",
            source=file_source,
            key=unknown[0],
        )
    for key, value in table.items():
        values[key] = _decode_value(schema, key, value, file_source)
        sources[key] = file_source
    variables = {
        name: value for name, value in environ.items() if name.startswith(schema.prefix)
    }
    by_key = {schema.variable(key): key for key in schema.fields}
    strangers = sorted(set(variables) - set(by_key))
    if strangers:
        hint = _suggestion(strangers[0], by_key) if len(strangers) == 1 else ""
        raise ConfigurationError(
            f"unknown {_plural('variable', strangers)} {', '.join(strangers)}{hint}:"
            f" [{schema.table}] has no such setting",
            source=strangers[0],
        )
    for variable in sorted(variables):
        key = by_key[variable]
        values[key] = _decode_value(schema, key, variables[variable], variable)
        sources[key] = variable
    return DecodedTable(values, sources)


def load_table(
    schema: TableSchema, data_dir: Path, environ: Mapping[str, str] | None = None
) -> DecodedTable:
    """``[table]`` of the configuration of ``data_dir``, with its variables applied.

    The whole file is checked (unknown tables are errors whichever table is read)."""
    environ = os.environ if environ is None else environ
    path = config_path(data_dir, environ)
    return decode_table(schema, read_document(path), path, environ)


@attrs.frozen
class LoadedMemoryConfig:
    """The MemoryConfig the file and environment make, and each set key's source."""

    config: MemoryConfig
    decoded: DecodedTable


def load_memory_config(
    data_dir: Path, environ: Mapping[str, str] | None = None
) -> LoadedMemoryConfig:
    """``[memory]`` and ``CAIRN_MEMORY_*`` over MemoryConfig's defaults.

    A check across settings (the budget shares must fit in the budget) is a
    ConfigurationError naming the sources of the settings it involves."""
    decoded = load_table(MEMORY_SCHEMA, data_dir, environ)
    try:
        config = MemoryConfig(**decoded.values)
    except ValueError as error:
        message = str(error)
        involved = [key for key in decoded.sources if key in message]
        sources = (
            list(dict.fromkeys(decoded.sources[key] for key in involved))
            or decoded.labels()
        )
        raise ConfigurationError(
            f"{', '.join(sources) or DEFAULT_SOURCE}: {message}",
            source=", ".join(sources),
            key=involved[0] if involved else None,
        ) from None
    return LoadedMemoryConfig(config, decoded)
