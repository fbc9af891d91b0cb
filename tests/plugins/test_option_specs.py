"""option_specs: what ``attnlab plugins`` shows of each plugin's options (name, default, type)."""

from __future__ import annotations

from attnlab.plugins import Attention
from attnlab.plugins.builtin.scorers import MultiHeadAttention
from attnlab.plugins.options import REQUIRED, option_specs


class _Base(Attention):
    def __init__(self, query_dim: int, key_dim: int, width: int = 3, **options) -> None:
        super().__init__(query_dim, key_dim, **options)


class _Sub(_Base):
    def __init__(self, query_dim, key_dim, scale=0.5, mode: str = "fast", needed=None, **options) -> None:
        super().__init__(query_dim, key_dim, **options)


def test_builtin_multihead_options_have_their_defaults_and_types():
    assert option_specs(MultiHeadAttention) == [
        {"name": "heads", "default": 4, "type": "int"},
        {"name": "model_dim", "default": None, "type": "int | None"},
        {"name": "dropout", "default": 0.0, "type": "float"},
    ]


def test_inherited_options_keep_their_declaration_and_unannotated_ones_take_the_default_type():
    specs = {spec["name"]: spec for spec in option_specs(_Sub)}
    assert set(specs) == {"scale", "mode", "needed", "width"}  # no query_dim/key_dim: the contract's
    assert specs["width"] == {"name": "width", "default": 3, "type": "int"}  # from _Base.__init__
    assert specs["scale"] == {"name": "scale", "default": 0.5, "type": "float"}
    assert specs["mode"] == {"name": "mode", "default": "fast", "type": "str"}
    assert specs["needed"] == {"name": "needed", "default": None, "type": ""}


def test_an_option_without_a_default_is_marked_required():
    class Strict(Attention):
        def __init__(self, query_dim: int, key_dim: int, *, temperature: float, **options) -> None:
            super().__init__(query_dim, key_dim, **options)

    assert option_specs(Strict) == [{"name": "temperature", "default": REQUIRED, "type": "float"}]
