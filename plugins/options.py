"""Plugin options: the keyword arguments a plugin's ``__init__`` accepts beyond the fixed ones."""

from __future__ import annotations

import inspect


def option_names(cls: type, fixed: tuple[str, ...]) -> list[str]:
    """Keyword options of ``cls.__init__`` (walking up the MRO), minus the ``fixed`` arguments."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for param in inspect.signature(init).parameters.values():
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                continue
            if param.name not in ("self", *fixed) and param.name not in names:
                names.append(param.name)
    return names


def reject_unknown(cls: type, options: dict, fixed: tuple[str, ...]) -> None:
    """Raise ValueError naming the unknown options of ``cls`` and listing the accepted ones."""
    if options:
        allowed = option_names(cls, fixed)
        raise ValueError(
            f"{cls.__name__} got unknown option(s) {', '.join(sorted(options))}; "
            f"allowed: {', '.join(allowed) or 'none'}"
        )


def require_positive_int(**values: object) -> None:
    """Raise ValueError for the first value that is not a positive integer."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def require_probability(**values: object) -> None:
    """Raise ValueError for the first value outside [0, 1)."""
    for name, value in values.items():
        if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
            raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
