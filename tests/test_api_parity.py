"""The API is declared once: every surface has exactly the Protocol's methods, with the
same parameter names, kinds, defaults and (resolved) annotations, async or sync as its
twin says. A surface that drifts (a missing method, another default, a dict where the
Protocol says a record) fails here by name."""

from __future__ import annotations

import collections.abc
import datetime
import inspect
import typing
from typing import Any

import pytest

import cairn
import cairn.api.reports
import cairn.api.status
import cairn.domain.directive
import cairn.domain.evidence
import cairn.domain.metadata
import cairn.domain.outcomes
import cairn.domain.scope
import cairn.retrieval.types
from cairn.api.protocol import (
    BlockingDirectivesApi,
    BlockingMemoryApi,
    DirectivesApi,
    MemoryApi,
)
from cairn.hosts.asyncio_host import AsyncioDirectives, AsyncioMemory
from cairn.ipc.blocking import BlockingClient, BlockingDirectives
from cairn.ipc.client import Client, ClientDirectives
from cairn.runtime.directives import DirectiveBook

# Annotations are strings (``from __future__ import annotations``) naming types most
# modules import only for type checking; they resolve against the public types.
_NAMESPACE: dict[str, Any] = {
    **vars(collections.abc),
    "dt": datetime,
    **{
        name: getattr(module, name)
        for module in (
            cairn.api.reports,
            cairn.api.status,
            cairn.domain.directive,
            cairn.domain.evidence,
            cairn.domain.metadata,
            cairn.domain.outcomes,
            cairn.domain.scope,
            cairn.retrieval.types,
        )
        for name in module.__all__
    },
}
# Beyond the API, each surface has its own lifecycle and transport methods; anything else
# public must be declared in the Protocol (a method added to one surface only fails here).
# In-process only (cairn.api.protocol's docstring says why):
EMBEDDED_ONLY = {
    "aclose",
    "embedder",
    "path",
    "resume_interrupted_clears",
    "use_embedder",
    "use_text_provider",
}
# A liveness round trip, and the transport's one entry point.
CLIENT_ONLY = {"ping", "send"}
TRIO_CLIENT_ONLY = {*CLIENT_ONLY, "read_answers"}
BLOCKING_CLIENT_ONLY = {*CLIENT_ONLY, "close"}
ASYNCIO_ONLY = {"request_close"}

SURFACES = [
    pytest.param(MemoryApi, cairn.Memory, EMBEDDED_ONLY, id="Memory"),
    pytest.param(MemoryApi, Client, TRIO_CLIENT_ONLY, id="Client"),
    pytest.param(MemoryApi, AsyncioMemory, ASYNCIO_ONLY, id="AsyncioMemory"),
    pytest.param(
        BlockingMemoryApi, BlockingClient, BLOCKING_CLIENT_ONLY, id="BlockingClient"
    ),
    pytest.param(DirectivesApi, DirectiveBook, set(), id="DirectiveBook"),
    pytest.param(DirectivesApi, ClientDirectives, set(), id="ClientDirectives"),
    pytest.param(DirectivesApi, AsyncioDirectives, set(), id="AsyncioDirectives"),
    pytest.param(
        BlockingDirectivesApi, BlockingDirectives, set(), id="BlockingDirectives"
    ),
]


def _members(protocol: type) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def _public_methods(surface: type) -> set[str]:
    """Names of the surface's public methods and properties (attrs fields excluded)."""
    names = set()
    for name in dir(surface):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(surface, name)
        if isinstance(value, property) or inspect.isfunction(value):
            names.add(name)
    return names


def _hints(function: Any) -> dict[str, Any]:
    # The function's own module wins; the public types only fill the gaps.
    namespace = {**_NAMESPACE, **getattr(function, "__globals__", {})}
    return typing.get_type_hints(function, globalns=namespace)


def _describe(function: Any) -> list[tuple[str, str, object, object]]:
    """(name, kind, default, annotation) of every parameter but ``self``, then the return."""
    hints = _hints(function)
    described = [
        (parameter.name, parameter.kind.name, parameter.default, hints.get(name))
        for name, parameter in inspect.signature(function).parameters.items()
        if name != "self"
    ]
    described.append(("return", "", None, hints.get("return")))
    return described


def _drifts(protocol: type, surface: type, extra: set[str]) -> list[str]:
    members = _members(protocol)
    public = _public_methods(surface)
    drifts = [
        f"{name}: not declared in {protocol.__name__}"
        for name in sorted(public - set(members) - extra)
    ]
    for name, declared in members.items():
        if name not in public:
            drifts.append(f"{name}: missing")
            continue
        actual = inspect.getattr_static(surface, name)
        if isinstance(declared, property):
            if not isinstance(actual, property):
                drifts.append(f"{name}: not a property")
            continue
        if inspect.iscoroutinefunction(declared) != inspect.iscoroutinefunction(actual):
            drifts.append(f"{name}: async/sync differs from {protocol.__name__}")
        try:
            described = _describe(actual)
        except NameError as error:
            drifts.append(f"{name}: unresolvable annotation ({error})")
            continue
        expected = _describe(declared)
        if described != expected:
            drifts.append(f"{name}: {_difference(described, expected)}")
    return drifts


def _difference(
    described: list[tuple[str, str, object, object]],
    expected: list[tuple[str, str, object, object]],
) -> str:
    """The first parameter (or the return) that differs, in words."""
    names = [entry[0] for entry in described]
    declared_names = [entry[0] for entry in expected]
    if names != declared_names:
        return f"parameters {names} != declared {declared_names}"
    for actual, wanted in zip(described, expected, strict=True):
        if actual != wanted:
            return f"{actual[0]} is {actual[1:]}, declared {wanted[1:]}"
    return "differs"  # pragma: no cover - the lists differ somewhere


@pytest.mark.parametrize(("protocol", "surface", "extra"), SURFACES)
def test_surface_matches_its_protocol(
    protocol: type, surface: type, extra: set[str]
) -> None:
    assert _drifts(protocol, surface, extra) == []


def test_sync_twins_declare_the_same_methods() -> None:
    for asynchronous, synchronous in (
        (MemoryApi, BlockingMemoryApi),
        (DirectivesApi, BlockingDirectivesApi),
    ):
        async_members = _members(asynchronous)
        sync_members = _members(synchronous)
        assert set(async_members) == set(sync_members)
        for name, declared in async_members.items():
            if isinstance(declared, property):
                assert isinstance(sync_members[name], property)
                continue
            assert inspect.iscoroutinefunction(declared)
            assert not inspect.iscoroutinefunction(sync_members[name])
            # The directives facades differ in type by design; everything else is equal.
            assert _describe(declared) == _describe(sync_members[name]), name


def test_directives_property_returns_the_twin_facade() -> None:
    for protocol, facade in (
        (MemoryApi, DirectivesApi),
        (BlockingMemoryApi, BlockingDirectivesApi),
    ):
        getter = _members(protocol)["directives"].fget
        assert _hints(getter)["return"] is facade
