"""The search space of ``attnlab tune``, read from YAML and checked before anything trains.

A space file::

    space:
      learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}   # a float range, log scale
      hidden_size: {low: 64, high: 256, step: 64}             # an int range (both bounds ints)
      dropout: {low: 0.0, high: 0.4}
      lr_schedule: [constant, cosine, inverse_sqrt]           # choices
      scorer.heads: [2, 4, 8]                                 # an option of the chosen scorer
    objective: val_exact_match        # or val_loss (see attnlab.tuning.trials.OBJECTIVES)
    pruner: median                    # median, hyperband, threshold or none; or {name: median, ...}
    sampler_seed: 0
    baseline: true                    # the first trial trains the config's own values (default false)

A key is a config field or ``GROUP.NAME``, option NAME of the chosen scorer, encoder or decoder.
What fixes a trial's arm, data and budget cannot be searched (:data:`FIXED`): every trial of a
study trains the same arm on the same data for the same epochs, so trials and arms compare.
With ``baseline: true`` the study's first trial trains the base config's own value of every
searched key (:func:`baseline_values`), so the best trial is never worse, at the trials' budget,
than the config the tune started from; each value must lie in its dimension.
A range of a config field takes the field's type (a float field's range is a float range);
elsewhere both bounds ints make an int range. Every mistake is a :class:`~attnlab.lab.errors.UserError`
of one line naming the key.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError

#: Plugin groups whose options a space may search (``scorer.heads``).
OPTION_GROUPS = ("scorer", "encoder", "decoder")
UNMEASURED = "does not change what a trial's validation measures"
#: Config fields a space may not search, and why.
FIXED = {
    **dict.fromkeys(
        ("task", "scorer", "encoder", "decoder"),
        "names the arm a study tunes; give it with --task/--scorer/--encoder/--decoder and tune each arm in a study of its own",
    ),
    **dict.fromkeys(
        ("task_options", "test_task_options", "train_size", "validation_size", "test_size", "seed"),
        "fixes the data every trial is measured on; give it with the config",
    ),
    **dict.fromkeys(
        ("epochs", "target_exact_match"), "is each trial's budget, the same for every trial; give it with --epochs or the config"
    ),
    **dict.fromkeys(("beam_size", "device", "model_name", "compile_loops", "explain_examples", "explain_steps"), UNMEASURED),
    **dict.fromkeys(
        ("scorer_options", "encoder_options", "decoder_options"), "is a mapping: search one option as GROUP.NAME, e.g. scorer.heads"
    ),
}
#: The keys of a space file besides ``space``.
FILE_KEYS = ("space", "objective", "pruner", "sampler_seed", "baseline")


@dataclass(frozen=True)
class Range:
    """Numbers from ``low`` to ``high`` (inclusive); ints when ``integer``, on a log scale when
    ``log``, in steps of ``step`` when given."""

    low: float
    high: float
    integer: bool = False
    log: bool = False
    step: float | None = None

    def extremes(self) -> list[Any]:
        return [self.low, self.high]

    def holds(self, value: Any) -> bool:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return number and self.low <= value <= self.high and (not self.integer or value == int(value))

    def describe(self) -> str:
        kind = "int" if self.integer else "float"
        return f"{kind} [{self.low:g}, {self.high:g}]" + (" log" if self.log else "") + (f" step {self.step:g}" if self.step else "")


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (YAML scalars)."""

    values: tuple[Any, ...]

    def extremes(self) -> list[Any]:
        return list(self.values)

    def holds(self, value: Any) -> bool:
        return any(value == choice and isinstance(value, bool) == isinstance(choice, bool) for choice in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


Dimension = Range | Choice


@dataclass(frozen=True)
class Space:
    """A study's search space: key -> dimension, in file order; and how it is searched."""

    dimensions: dict[str, Dimension]
    objective: str = "val_exact_match"
    pruner: dict[str, Any] | None = None
    sampler_seed: int = 0
    baseline: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The space as JSON-ready data (it names the study; see :func:`attnlab.tuning.trials.study_name`;
        ``baseline`` only when set, so that the studies of earlier spaces keep their names)."""
        data = {
            "space": {key: dim.describe() for key, dim in self.dimensions.items()},
            "objective": self.objective,
            "pruner": self.pruner,
            "sampler_seed": self.sampler_seed,
        }
        return {**data, "baseline": True} if self.baseline else data


def parse_space(data: Any, where: str = "the search space") -> Space:
    """The checked :class:`Space` of a space file's mapping ``data``; UserError naming the key."""
    from attnlab.tuning.trials import OBJECTIVES, parse_pruner

    if not isinstance(data, Mapping) or not isinstance(data.get("space"), Mapping) or not data["space"]:
        raise UserError(
            f"{where} must hold a mapping 'space:' of config keys to ranges or choices, e.g. 'space: {{learning_rate: {{low: 1.0e-4, high: 1.0e-2, log: true}}}}'"
        )
    unknown = [str(key) for key in data if key not in FILE_KEYS]
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r}; a space file holds {', '.join(FILE_KEYS)}")
    objective = data.get("objective", "val_exact_match")
    if objective not in OBJECTIVES:
        raise UserError(f"{where}: objective {objective!r}: choose one of {', '.join(OBJECTIVES)}")
    seed = data.get("sampler_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"{where}: sampler_seed {seed!r}: give an integer")
    baseline = data.get("baseline", False)
    if not isinstance(baseline, bool):
        raise UserError(f"{where}: baseline {baseline!r}: give true (the first trial trains the config's own values) or false")
    dimensions = {str(key): parse_dimension(str(key), value) for key, value in data["space"].items()}
    return Space(dimensions, objective, parse_pruner(data.get("pruner", "median"), where), seed, baseline)


def check_key(key: str) -> None:
    """UserError unless ``key`` names a config field that may be searched or ``GROUP.NAME``."""
    group, dot, name = key.partition(".")
    if dot:
        if group not in OPTION_GROUPS or not name or "." in name:
            raise UserError(
                f"search space key {key!r}: a plugin option is GROUP.NAME with GROUP one of {', '.join(OPTION_GROUPS)}, e.g. scorer.heads"
            )
        return
    if key in FIXED:
        raise UserError(f"search space key {key!r} cannot be searched: it {FIXED[key]}")
    if key not in ExperimentConfig.model_fields:
        allowed = [k for k in ExperimentConfig.model_fields if k not in FIXED]
        raise UserError(
            f"unknown search space key {key!r}; allowed: {', '.join(allowed)}, or GROUP.NAME for a plugin option (e.g. scorer.heads)"
        )


def _number(key: str, name: str, value: Any) -> float | int:
    """A bound as a number (YAML reads ``1e-4`` without a dot as text)."""
    if isinstance(value, bool):
        raise UserError(f"search space key {key!r}: {name} {value!r} is not a number")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise UserError(f"search space key {key!r}: {name} {value!r} is not a number") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"search space key {key!r}: {name} {value!r} is not a finite number")
    return value


def _float_field(key: str) -> bool | None:
    """True for a config field of type float, False for an int one, None otherwise (a plugin option)."""
    field = ExperimentConfig.model_fields.get(key)
    kinds = (typing.get_args(field.annotation) or (field.annotation,)) if field is not None else ()
    return True if float in kinds else False if int in kinds else None


def parse_dimension(key: str, value: Any) -> Dimension:
    """One dimension: a list (or ``{choices: [...]}``) of choices, or ``{low, high[, log][, step]}``."""
    check_key(key)
    if isinstance(value, Mapping) and set(value) == {"choices"}:
        value = value["choices"]
    if isinstance(value, list):
        return _choice(key, value)
    if not isinstance(value, Mapping):
        raise UserError(f"search space key {key!r}: give a range {{low: ..., high: ...}} or a list of choices, not {value!r}")
    extra = sorted(set(map(str, value)) - {"low", "high", "log", "step"})
    if extra or "low" not in value or "high" not in value:
        raise UserError(
            f"search space key {key!r}: a range takes low, high and optionally log, step" + (f"; unknown {extra[0]!r}" if extra else "")
        )
    low, high = _number(key, "low", value["low"]), _number(key, "high", value["high"])
    log, step = value.get("log", False), value.get("step")
    if not isinstance(log, bool):
        raise UserError(f"search space key {key!r}: log {log!r}: give true or false")
    floats = _float_field(key)
    integer = not floats if floats is not None else isinstance(low, int) and isinstance(high, int)
    if integer and (low != int(low) or high != int(high)):
        raise UserError(f"search space key {key!r} takes whole numbers: low {low!r}, high {high!r}")
    if low > high:
        raise UserError(f"search space key {key!r}: low {low!r} is above high {high!r}")
    if low == high:
        raise UserError(
            f"search space key {key!r}: the range [{low!r}, {high!r}] is empty (one value); set it with -o {key}={low!r} instead"
        )
    if log and low <= 0:
        raise UserError(f"search space key {key!r}: a log scale needs low > 0, got {low!r}")
    if step is not None:
        step = _number(key, "step", step)
        if step <= 0 or log:
            raise UserError(f"search space key {key!r}: step {step!r}: give a positive step, and no step on a log scale")
    return Range(int(low) if integer else float(low), int(high) if integer else float(high), integer, log, step)


def _choice(key: str, values: list[Any]) -> Choice:
    if not values:
        raise UserError(f"search space key {key!r}: the list of choices is empty")
    for value in values:
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise UserError(f"search space key {key!r}: choice {value!r} is not a single value (a number, text, true/false or null)")
    if len(set(map(repr, values))) != len(values):
        raise UserError(f"search space key {key!r}: a choice is listed twice in {values!r}")
    return Choice(tuple(values))


def apply_values(base: ExperimentConfig, values: Mapping[str, Any]) -> ExperimentConfig:
    """``base`` with the searched ``values`` (key -> value; ``GROUP.NAME`` sets a plugin option),
    validated as a config; UserError naming the first bad value."""
    from pydantic import ValidationError

    from attnlab.lab.config_sources import validation_message

    data = base.model_dump()
    for key, value in values.items():
        group, dot, name = key.partition(".")
        if dot:
            data[f"{group}_options"] = {**data[f"{group}_options"], name: value}
        else:
            data[key] = value
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise UserError(validation_message(exc, {})) from None


def baseline_values(space: Space, base: ExperimentConfig) -> dict[str, Any]:
    """The base config's own value of every searched key (``GROUP.NAME``: the option as the config
    sets it): the values of a study's baseline trial. UserError naming the key when the config
    leaves it to the plugins' defaults (an unset option, a field left None), or when a value lies
    outside its dimension."""
    values = {}
    for key, dim in space.dimensions.items():
        group, dot, name = key.partition(".")
        options = getattr(base, f"{group}_options") if dot else {}
        if dot and name not in options:
            raise UserError(
                f"baseline: the config does not set {key} (the plugin's default applies); set it with -o {key}=VALUE, or drop baseline: true"
            )
        value = options[name] if dot else getattr(base, key)
        if value is None:
            raise UserError(
                f"baseline: the config does not set {key} (each plugin's own applies); set it with -o {key}=VALUE, or drop baseline: true"
            )
        if not dim.holds(value):
            raise UserError(
                f"baseline: the config's {key} {value!r} is outside the space ({dim.describe()}); widen it, or drop baseline: true"
            )
        values[key] = value
    return values


def extreme_values(space: Space) -> list[dict[str, Any]]:
    """The candidate values to check before a study starts: each dimension's extremes (a range's
    low and high, every choice) with the others at the base config's, then all ranges at their
    lows (the first choices) and all at their highs (the last choices)."""
    candidates: list[dict[str, Any]] = []
    for key, dim in space.dimensions.items():
        candidates.extend({key: value} for value in dim.extremes())
    if len(space.dimensions) > 1:
        candidates.append({key: dim.extremes()[0] for key, dim in space.dimensions.items()})
        candidates.append({key: dim.extremes()[-1] for key, dim in space.dimensions.items()})
    return candidates


def describe_values(values: Mapping[str, Any]) -> str:
    """``learning_rate=0.01, scorer.heads=8``: a candidate named in a refusal."""
    return ", ".join(f"{key}={value!r}" for key, value in values.items())
