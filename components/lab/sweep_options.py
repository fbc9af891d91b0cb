"""A sweep's grid, seeds and length bands as typed on the command line, checked: every mistake is
a UserError of one line naming the option, the bad value and what is allowed."""

from __future__ import annotations

from attnlab.lab.errors import UserError

#: Grid options -> plugin groups.
GRID_GROUPS = {"task": "tasks", "scorer": "scorers", "encoder": "encoders", "decoder": "decoders"}


def unknown_plugin(field: str, name: str) -> str | None:
    """Why ``name`` is no installed plugin for config field ``field`` (task, scorer, encoder,
    decoder), e.g. "unknown scorer 'cosine'; available: ...", told from the entry points without
    importing any plugin; None when it is installed."""
    from attnlab.plugins import list_plugins

    available = list_plugins(GRID_GROUPS[field])
    return None if name in available else f"unknown {field} {name!r}; available: {', '.join(available)}"


def parse_names(option: str, text: str | None) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]`` checked against the installed plugins of the option's group."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise UserError(f"--{option} {text!r}: give comma-separated names without empty entries, e.g. --{option} dot,additive")
    problem = next(filter(None, (unknown_plugin(option, name) for name in names)), None)
    if problem:
        raise UserError(f"--{option}: {problem}")
    if len(set(names)) != len(names):
        raise UserError(f"--{option} {text!r}: a name is repeated")
    return names


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``."""
    parts = [part.strip() for part in text.split(",")]
    try:
        seeds = [int(part) for part in parts]
    except ValueError:
        bad = next(part for part in parts if not part.lstrip("-").isdigit())
        raise UserError(f"--seeds {text!r}: {bad!r} is not an integer; give e.g. --seeds 0,1,2") from None
    if len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds {text!r}: a seed is repeated")
    return seeds


def parse_bands(text: str | None) -> list[tuple[int, int]]:
    """``"5-20,21-40"`` -> ``[(5, 20), (21, 40)]`` (inclusive source-length ranges)."""
    if not text:
        return []
    bands = []
    for part in text.split(","):
        low, sep, high = part.strip().partition("-")
        if not (sep and low.isdigit() and high.isdigit()) or int(low) > int(high):
            raise UserError(f"--length-bands {text!r}: {part.strip()!r} is not a range LOW-HIGH with LOW <= HIGH, e.g. 21-40")
        bands.append((int(low), int(high)))
    return bands
