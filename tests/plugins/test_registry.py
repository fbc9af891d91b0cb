"""Registry: listing without importing, loading, and every failure mode."""

from __future__ import annotations

import sys

import pytest

from attnlab.plugins import Attention, PluginError, create_plugin, describe_plugins, list_plugins, load_plugin

BUILTINS = {
    "scorers": ["additive", "dot", "general", "multihead", "none", "scaled_dot"],
    "encoders": ["bigru", "gru", "lstm", "transformer"],
    "decoders": ["rnn", "transformer"],
    "tasks": ["date", "date-formats", "reverse"],
}


@pytest.mark.parametrize("group", sorted(BUILTINS))
def test_builtins_are_listed_from_entry_points(group):
    assert set(BUILTINS[group]) <= set(list_plugins(group))
    assert list_plugins(group) == sorted(list_plugins(group))
    assert all(info.distribution.startswith("attnlab ") for info in describe_plugins(group) if info.name in BUILTINS[group])


def test_listing_does_not_import_plugins(make_distribution):
    make_distribution(
        "thirdparty-lazy",
        {"attnlab.scorers": {"lazy": "thirdparty_lazy:Lazy"}},
        {"thirdparty_lazy.py": "raise RuntimeError('imported too early')\n"},
    )
    assert "lazy" in list_plugins("scorers")
    assert "thirdparty_lazy" not in sys.modules


def test_a_distribution_installed_after_a_listing_is_listed(tmp_path, monkeypatch):
    """Listings are kept between calls; installing into a folder already on sys.path (what pip
    does in a long-running `attnlab server`) shows up in the next listing, and removing it too."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    assert "late" not in list_plugins("scorers")
    info = site / "thirdparty_late-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-late\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[attnlab.scorers]\nlate = thirdparty_late:Late\n")
    assert "late" in list_plugins("scorers")
    for file in info.iterdir():
        file.unlink()
    info.rmdir()
    assert "late" not in list_plugins("scorers")


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(PluginError, match=r"unknown scorer 'cosine'; available: additive, dot, general"):
        load_plugin("scorers", "cosine")


def test_unknown_name_does_not_offer_plugins_that_cannot_load(make_distribution):
    make_distribution(
        "thirdparty-unloadable",
        {"attnlab.scorers": {"unloadable": "thirdparty_unloadable:Gone", "notascorer": "thirdparty_unloadable:Other"}},
        {"thirdparty_unloadable.py": "class Other:\n    pass\n"},
    )
    assert {"unloadable", "notascorer"} <= set(list_plugins("scorers"))  # listed: installed
    with pytest.raises(PluginError) as info:
        load_plugin("scorers", "cosine")
    message = str(info.value)
    available = message.split("available: ")[1].split(" (")[0].split(", ")
    assert "dot" in available and "unloadable" not in available and "notascorer" not in available
    assert message.endswith("(installed but cannot load: notascorer, unloadable)")


def test_unknown_group():
    with pytest.raises(PluginError, match="unknown plugin group 'scorer'"):
        list_plugins("scorer")


def test_broken_plugin_fails_alone_with_name_and_distribution(make_distribution):
    make_distribution(
        "thirdparty-broken",
        {"attnlab.scorers": {"broken": "thirdparty_broken:Broken"}},
        {"thirdparty_broken.py": "import not_a_real_module_xyz\n"},
    )
    with pytest.raises(PluginError) as info:
        load_plugin("scorers", "broken")
    message = str(info.value)
    assert "'broken'" in message and "thirdparty-broken 1.0" in message and "not_a_real_module_xyz" in message
    assert load_plugin("scorers", "dot").__name__ == "DotAttention"  # the others keep working


def test_duplicate_name_names_both_targets(make_distribution):
    make_distribution(
        "thirdparty-dup",
        {"attnlab.scorers": {"dot": "thirdparty_dup:Dot"}},
        {"thirdparty_dup.py": "from attnlab.plugins import Attention\nclass Dot(Attention):\n    pass\n"},
    )
    with pytest.raises(PluginError, match="declared twice") as info:
        load_plugin("scorers", "dot")
    assert "attnlab.plugins.builtin.scorers:DotAttention" in str(info.value)
    assert "thirdparty_dup:Dot" in str(info.value)
    assert load_plugin("scorers", "additive").__name__ == "AdditiveAttention"


def test_wrong_base_class_is_refused(make_distribution):
    make_distribution(
        "thirdparty-wrongbase",
        {"attnlab.encoders": {"notanencoder": "thirdparty_wrongbase:NotAnEncoder"}},
        {"thirdparty_wrongbase.py": "from attnlab.plugins import Attention\nclass NotAnEncoder(Attention):\n    pass\n"},
    )
    with pytest.raises(PluginError, match="is not a subclass of attnlab.plugins.Encoder"):
        load_plugin("encoders", "notanencoder")


def test_create_plugin_reports_bad_options():
    with pytest.raises(PluginError, match="unknown option.*colour.*allowed: heads, model_dim, dropout"):
        create_plugin("scorers", "multihead", 8, 8, colour="red")
    with pytest.raises(PluginError, match="heads=3 does not divide model_dim=8"):
        create_plugin("scorers", "multihead", 8, 8, heads=3)
    with pytest.raises(PluginError, match="hidden_size must be a positive integer, got -4"):
        create_plugin("encoders", "gru", 10, 4, -4)
    assert isinstance(create_plugin("scorers", "dot", 4, 4), Attention)
