"""Plugin options: the keyword arguments a plugin's ``__init__`` accepts beyond the fixed ones."""

from __future__ import annotations

import inspect
from typing import Any, ClassVar


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


class Configurable:
    """What the plugin base classes share: the leading ``__init__`` arguments named in
    ``_fixed`` are the contract's (sizes, factories), every other keyword parameter of
    ``__init__`` (up the class hierarchy) is an option."""

    _fixed: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def option_names(cls) -> list[str]:
        """Names of the options this plugin accepts (for error messages and the CLI)."""
        return option_names(cls, cls._fixed)


def first_few(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names`` joined with ', ', then how many more: 'a, b, c and
    99,997 more' (a message names a few, whatever the input holds)."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more:,} more" if more > 0 else "")


def reject_unknown(cls: type, options: dict[str, Any], fixed: tuple[str, ...]) -> None:
    """Raise ValueError naming the first few unknown options of ``cls`` and listing the accepted
    ones."""
    if options:
        allowed = option_names(cls, fixed)
        raise ValueError(f"{cls.__name__} got unknown option(s) {first_few(sorted(options))}; allowed: {', '.join(allowed) or 'none'}")


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


#: The ``default`` of an option that has none.
REQUIRED = "(required)"


def option_specs(cls: type[Configurable]) -> list[dict[str, object]]:
    """``name``, ``default`` and ``type`` of each option of plugin class ``cls`` (the names of its
    ``option_names()``, read from the ``__init__`` that declares each one). ``type`` is the
    annotation as written (``"int | None"``), else the default's type name, else ``""``; an option
    without a default has ``default`` :data:`REQUIRED`.

    >>> from attnlab.plugins.builtin.scorers import MultiHeadAttention
    >>> [(o["name"], o["default"], o["type"]) for o in option_specs(MultiHeadAttention)]
    [('heads', 4, 'int'), ('model_dim', None, 'int | None'), ('dropout', 0.0, 'float')]
    """
    declared: dict[str, inspect.Parameter] = {}
    for klass in reversed(cls.__mro__):  # a subclass's declaration wins
        init = klass.__dict__.get("__init__")
        if init is not None:
            declared.update(inspect.signature(init).parameters)
    specs = []
    for name in cls.option_names():
        param = declared[name]
        default = param.default
        if isinstance(param.annotation, str):  # annotations under ``from __future__ import annotations``
            kind = param.annotation
        elif param.annotation is not param.empty:
            kind = getattr(param.annotation, "__name__", str(param.annotation))
        else:
            kind = "" if default is param.empty or default is None else type(default).__name__
        specs.append({"name": name, "default": REQUIRED if default is param.empty else default, "type": kind})
    return specs
