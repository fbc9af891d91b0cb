"""The decoder contract, checked on every installed decoder plugin with attnlab.plugins.testing (what
plugin authors run)."""

from __future__ import annotations

import pytest

from attnlab.plugins import PAD_ID, list_plugins, load_plugin
from attnlab.plugins.builtin.scorers import DotAttention
from attnlab.plugins.testing import check_decoder, check_plugin


@pytest.mark.parametrize("name", list_plugins("decoders"))
def test_conformance_kit(name):
    check_decoder(load_plugin("decoders", name))
    assert check_plugin("decoders", name) is None  # what `attnlab plugins --check` runs


def test_conformance_kit_with_options():
    check_decoder(load_plugin("decoders", "rnn"), cell="lstm", dropout=0.2)
    check_decoder(load_plugin("decoders", "transformer"), layers=1, heads=2, max_length=6)


@pytest.mark.parametrize("name", list_plugins("decoders"))
def test_pad_embeddings_stay_zero(name):
    decoder = load_plugin("decoders", name)(11, 6, 8, 8, DotAttention)
    embedding = getattr(decoder, "embedding", None)
    if embedding is not None:
        assert embedding.padding_idx == PAD_ID and not embedding.weight[PAD_ID].any()
