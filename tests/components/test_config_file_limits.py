"""A huge config file is refused before it is parsed, and unknown keys are named a few at a time:
a 5 MB file of unknown keys took over a minute and answered with a 2.6 MB line."""

from __future__ import annotations

import pytest

from attnlab.lab.config_sources import MAX_CONFIG_BYTES, build_config
from attnlab.lab.errors import UserError
from attnlab.plugins.options import reject_unknown


def keys_file(path, count: int, indent: str = "", header: str = ""):
    path.write_text(header + "".join(f"{indent}unknown_key_{i:06d}: {i}\n" for i in range(count)))
    return path


def test_a_config_file_over_the_size_limit_is_refused_before_parsing(tmp_path, monkeypatch):
    from attnlab.lab import config_sources

    big = keys_file(tmp_path / "big.yaml", 200_000)
    monkeypatch.setattr(config_sources, "parse_yaml", lambda *a, **k: pytest.fail("the file was parsed"))
    with pytest.raises(UserError) as caught:
        build_config(big, {}, [])
    size = big.stat().st_size
    assert str(caught.value) == (
        f"config file {str(big)!r} holds {size:,} bytes; a config file may hold at most {MAX_CONFIG_BYTES:,} "
        "(a config is a few dozen keys): give the keys you mean to set"
    )


def test_many_unknown_keys_are_named_three_at_a_time(tmp_path):
    many = keys_file(tmp_path / "many.yaml", 20_000)
    with pytest.raises(UserError) as caught:
        build_config(many, {}, [])
    message = str(caught.value)
    assert message.startswith(
        "unknown config keys 'unknown_key_000000', 'unknown_key_000001', 'unknown_key_000002' and 19,997 more "
        f"(from config file {str(many)!r}); allowed keys: task, "
    )
    assert len(message) < 1000 and "problem" not in message


def test_one_unknown_key_keeps_its_wording(tmp_path):
    with pytest.raises(UserError, match=r"^unknown config key 'epoch' \(from -o epoch=3\); allowed keys: task, "):
        build_config(None, {}, ["epoch=3"])


def test_many_unknown_plugin_options_are_named_three_at_a_time():
    from attnlab.plugins.builtin.scorers import ScaledDotAttention

    with pytest.raises(ValueError) as caught:
        reject_unknown(ScaledDotAttention, {f"o{i:05d}": i for i in range(50_000)}, ("query_dim", "key_dim"))
    assert str(caught.value).startswith("ScaledDotAttention got unknown option(s) o00000, o00001, o00002 and 49,997 more; allowed: ")
    assert len(str(caught.value)) < 300
