"""Config assembly: defaults < a YAML file < command-line flags < ``-o KEY=VALUE`` overrides, into
one validated :class:`~attnlab.lab.config.ExperimentConfig`. Every mistake is a UserError of one line
naming the key, where it came from, and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.plugins.options import first_few

#: The largest config file read, in bytes: parsing 5 MB of YAML took over a minute.
MAX_CONFIG_BYTES = 1_000_000
#: ``-o GROUP.NAME=VALUE`` sets option NAME of a plugin: GROUP_options.NAME.
PLUGIN_OPTION_GROUPS = ("task", "test_task", "scorer", "encoder", "decoder")


def parse_yaml(text: str) -> Any:
    """``text`` read as YAML by the safe loader, libyaml's C build where PyYAML has it (20,000 keys:
    0.65 s against 4.05 s for the pure-Python one on a busy machine)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 (a safe loader)


def read_yaml(path: Path) -> dict[str, Any]:
    """The mapping of config keys in YAML file ``path``; UserError naming what is wrong."""
    if not path.exists():
        raise UserError(f"config file {str(path)!r} does not exist")
    if path.is_dir():
        raise UserError(f"config file {str(path)!r} is a folder; give a YAML file")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise UserError(
            f"config file {str(path)!r} holds {size:,} bytes; a config file may hold at most "
            f"{MAX_CONFIG_BYTES:,} (a config is a few dozen keys): give the keys you mean to set"
        )
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise UserError(f"config file {str(path)!r} is not valid YAML: {problem}{where}") from None
    except UnicodeDecodeError:
        raise UserError(f"config file {str(path)!r} is not UTF-8 text") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"config file {str(path)!r} must hold a mapping of config keys (e.g. 'epochs: 5'), not a {type(data).__name__}")
    return data


def parse_option(text: str) -> tuple[list[str], Any]:
    """``KEY=VALUE`` (VALUE read as YAML: 4, 0.1, true, [a, b]) -> key path and value."""

    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(f"--option {text!r}: expected KEY=VALUE, e.g. -o scorer.heads=4 or -o learning_rate=0.01")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    parts = key.split(".")
    if len(parts) == 2 and parts[0] in PLUGIN_OPTION_GROUPS:
        return [f"{parts[0]}_options", parts[1]], value
    if len(parts) == 1:
        return parts, value
    raise UserError(
        f"--option {text!r}: KEY is a config field (e.g. learning_rate) or a plugin option "
        f"{'|'.join(PLUGIN_OPTION_GROUPS)}.NAME (e.g. scorer.heads; test_task.NAME sets "
        "test_task_options)"
    )


def validation_message(exc: ValidationError, sources: dict[str, str]) -> str:
    """One line for a pydantic ValidationError of ExperimentConfig: which key, from where, what
    is wrong and what is allowed."""
    errors = exc.errors()
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"]) or "config"
    where = sources.get(str(first["loc"][0]) if first["loc"] else "", "")
    where = f" (from {where})" if where else ""
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    unknown = [".".join(str(part) for part in error["loc"]) for error in errors if error["type"] == "extra_forbidden"]
    if first["type"] == "extra_forbidden":
        allowed = ", ".join(ExperimentConfig.model_fields)
        others = len(errors) - len(unknown)
        more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
        keys = first_few([repr(key) for key in unknown])
        return f"unknown config key{'s' * (len(unknown) > 1)} {keys}{where}; allowed keys: {allowed}{more}"
    message = first["msg"].removeprefix("Value error, ")
    return f"bad value {first.get('input')!r} for {loc}{where}: {message}{more}"


def build_config(
    config_file: Path | None, flags: dict[str, Any], options: list[str], flag_names: dict[str, str] | None = None
) -> ExperimentConfig:
    """ExperimentConfig from defaults < YAML file < command-line flags < -o KEY=VALUE.

    ``flags`` maps config fields to values (None: not given); ``flag_names`` maps them to the
    flags users typed (e.g. ``hidden_size`` -> ``--hidden-size``), for error messages.
    """
    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if config_file is not None:
        data = read_yaml(config_file)
        sources = {str(key): f"config file {str(config_file)!r}" for key in data}
    for key, value in flags.items():
        if value is not None:
            data[key] = value
            sources[key] = (flag_names or {}).get(key, key)
    for text in options:
        path, value = parse_option(text)
        if len(path) == 2:
            current = data.get(path[0]) or {}
            if not isinstance(current, dict):
                raise UserError(f"{path[0]} must be a mapping of option names to values, got {current!r}")
            data[path[0]] = {**current, path[1]: value}
        else:
            data[path[0]] = value
        sources[path[0]] = f"-o {text}"
    try:
        return ExperimentConfig.model_validate(with_absolute_paths(data))
    except ValidationError as exc:
        raise UserError(validation_message(exc, sources)) from None


#: Task options that name a data file (the pairs task's).
PATH_OPTIONS = ("path", "validation_path", "test_path")


def with_absolute_paths(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the task options of :data:`PATH_OPTIONS` (data files, as the pairs task's)
    made absolute against the working directory: a model trained here then finds its files from
    anywhere (predict, the served model, a scheduled retrain)."""
    out = dict(data)
    for key in ("task_options", "test_task_options"):
        options = out.get(key)
        if isinstance(options, dict):
            made = {
                name: str(Path(options[name]).expanduser().absolute())
                for name in PATH_OPTIONS
                if isinstance(options.get(name), str) and options[name]
            }
            out[key] = {**options, **made}
    return out
