"""Plugin discovery through Python entry points.

Every plugin, built-in or third-party, is an entry point in one of the groups
``attnlab.scorers``, ``attnlab.encoders``, ``attnlab.decoders``, ``attnlab.tasks``; its name is
the name users type. Listing reads package metadata only; a plugin is imported when loaded, and
a plugin that fails to import fails alone.

Reading the metadata of every installed distribution takes ~30 ms here, and building one model
looks plugins up several times, so a group's listing is kept until ``sys.path`` or the
modification time of one of its folders changes (installing or removing a distribution adds or
removes a ``.dist-info`` folder there).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

#: Short group name -> ``module:class`` of the base class every plugin of the group must
#: subclass (imported when a plugin is loaded: tasks need no torch).
GROUPS: dict[str, str] = {
    "scorers": "attnlab.plugins.attention:Attention",
    "encoders": "attnlab.plugins.encoder:Encoder",
    "decoders": "attnlab.plugins.decoder:Decoder",
    "tasks": "attnlab.plugins.task:Task",
}


def base_class(group: str) -> type:
    """The base class of plugin group ``group`` (e.g. "tasks")."""
    module, name = GROUPS[_group_key(group)].split(":")
    base: type = getattr(importlib.import_module(module), name)
    return base


class PluginError(ValueError):
    """A plugin could not be found, imported or accepted."""


@dataclass(frozen=True)
class PluginInfo:
    """One entry point: its name, ``module:attr`` target and the distribution declaring it."""

    group: str
    name: str
    target: str
    distribution: str
    entry_point: EntryPoint = field(repr=False, compare=False)


def _group_key(group: str) -> str:
    key = group.removeprefix("attnlab.")
    if key not in GROUPS:
        raise PluginError(f"unknown plugin group {group!r}; groups: {', '.join(GROUPS)}")
    return key


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"


def _path_stamp() -> tuple[tuple[str, int | None], ...]:
    """Each ``sys.path`` entry with its modification time (None: not there)."""
    stamps: list[tuple[str, int | None]] = []
    for entry in sys.path:
        try:
            stamps.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            stamps.append((entry, None))
    return tuple(stamps)


#: Group -> (the path stamp it was read under, its listing).
_listings: dict[str, tuple[tuple[tuple[str, int | None], ...], list[PluginInfo]]] = {}


def describe_plugins(group: str) -> list[PluginInfo]:
    """Every entry point of ``group`` (e.g. "scorers"), sorted by name, without importing any."""
    key = _group_key(group)
    stamp = _path_stamp()
    cached = _listings.get(key)
    if cached is not None and cached[0] == stamp:
        return list(cached[1])
    listing = _read_listing(key)
    _listings[key] = (stamp, listing)
    return list(listing)


def _read_listing(key: str) -> list[PluginInfo]:
    seen: dict[tuple[str, str], PluginInfo] = {}
    for ep in entry_points(group=f"attnlab.{key}"):
        # The same distribution can be visible twice on sys.path (e.g. an egg-info beside an
        # editable install); that is one plugin, not a duplicate.
        seen.setdefault((ep.name, ep.value), PluginInfo(key, ep.name, ep.value, _distribution(ep), ep))
    return sorted(seen.values(), key=lambda info: (info.name, info.target))


def list_plugins(group: str) -> list[str]:
    """Sorted, unique names of the plugins installed in ``group``, without importing them."""
    return sorted({info.name for info in describe_plugins(group)})


def load_plugin(group: str, name: str) -> type:
    """Import and return the plugin class ``name`` of ``group``.

    Raises PluginError when the name is unknown (listing the ones that load; installed ones that
    cannot load are named apart, so a message never offers a name that fails), declared twice
    (naming both targets), fails to import (naming its distribution) or is not a subclass of the
    group's base class.
    """
    key = _group_key(group)
    infos = describe_plugins(key)
    matches = [info for info in infos if info.name == name]
    singular = key.removesuffix("s")
    if not matches:
        usable, broken = _loadable(key, infos)
        message = f"unknown {singular} {name!r}; available: {', '.join(usable) or 'none installed'}"
        if broken:
            message += f" (installed but cannot load: {', '.join(broken)})"
        raise PluginError(message)
    if len(matches) > 1:
        targets = " and ".join(f"{m.target} ({m.distribution})" for m in matches)
        raise PluginError(f"{singular} name {name!r} is declared twice: {targets}")
    info = matches[0]
    try:
        obj = info.entry_point.load()
    except Exception as exc:  # a broken plugin fails alone, whatever it raised
        raise PluginError(
            f"{singular} {name!r} ({info.target}, from {info.distribution}) failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    base = base_class(key)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise PluginError(
            f"{singular} {name!r} ({info.target}, from {info.distribution}) is not a subclass of attnlab.plugins.{base.__name__}"
        )
    return obj


def _loadable(key: str, infos: list[PluginInfo]) -> tuple[list[str], list[str]]:
    """Names of ``infos`` that load as a subclass of the group's base, and those that do not
    (fail to import, wrong class, declared twice): only the first kind is worth offering."""
    counts: dict[str, int] = {}
    for info in infos:
        counts[info.name] = counts.get(info.name, 0) + 1
    usable: list[str] = []
    broken: list[str] = []
    for info in infos:
        if counts[info.name] > 1:
            if info.name not in broken:
                broken.append(info.name)
            continue
        try:
            obj = info.entry_point.load()
        except Exception:  # reported in full by load_plugin(name) and `attnlab plugins`
            obj = None
        ok = isinstance(obj, type) and issubclass(obj, base_class(key))
        (usable if ok else broken).append(info.name)
    return usable, broken


def required_options(cls: type, fixed: int) -> list[str]:
    """Names of the keyword options of ``cls.__init__`` that have no default, skipping the first
    ``fixed`` (positional, contract) parameters."""
    params = [p for p in inspect.signature(getattr(cls, "__init__")).parameters.values() if p.name != "self"]  # noqa: B009 (mypy: cls.__init__ is unsound)
    return [
        p.name for p in params[fixed:]
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]  # fmt: skip


def create_plugin(group: str, name: str, *args: Any, **options: Any) -> Any:
    """Load plugin ``name`` of ``group`` and instantiate it; bad or missing options raise
    PluginError."""
    cls = load_plugin(group, name)
    kind = group.removesuffix("s")
    missing = [option for option in required_options(cls, len(args)) if option not in options]
    if missing:
        raise PluginError(f"{kind} {name!r} needs option(s) {', '.join(missing)}: give -o {kind}.{missing[0]}=VALUE")
    try:
        return cls(*args, **options)
    except PluginError:
        raise
    except (TypeError, ValueError) as exc:
        raise PluginError(f"{group.removesuffix('s')} {name!r}: {exc}") from exc
