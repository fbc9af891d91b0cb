"""A champion whose model fails the safety check: the next train registers its version, records
'champion unusable: ...', keeps the alias, exits 1 with one line; runs marks the champion."""

from __future__ import annotations

from _flowkit import TINY, client_for, is_progress_line, run_flow
from test_store_integrity import attnlab

TINY_ARGS = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 1}.items()]


def tamper_champion_code(store) -> None:
    """Append a line to the code file of the only logged model (version 1, the champion)."""
    (code,) = list((store / "artifacts").rglob("pyfunc_model.py"))
    code.write_text(code.read_text() + "\nprint('not attnlab code')\n")


def test_an_unusable_champion_keeps_the_alias_registers_the_challenger_and_says_so_once(capsys, empty_store):
    run_flow(empty_store, **TINY)
    client = client_for(empty_store)
    assert str(client.get_registered_model("attnlab-date").aliases["champion"]) == "1"
    tamper_champion_code(empty_store)
    capsys.readouterr()  # the first run's logs

    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    errors = [line for line in err.splitlines() if not is_progress_line(line)]
    assert code == 1 and "Traceback" not in err, err
    assert len(errors) == 1 and errors[0].startswith("attnlab: error: the champion of attnlab-date (version 1) cannot be loaded: "), err
    assert "pyfunc_model.py (sha256" in errors[0] and "version 2 was registered but not promoted" in errors[0]
    assert "not promoted: version 1 holds the alias but cannot be loaded (see the error line)" in out

    model = client.get_registered_model("attnlab-date")
    assert str(model.aliases["champion"]) == "1"
    challenger = client.get_model_version("attnlab-date", "2")
    assert challenger.tags["promotion.promoted"] == "false"
    assert challenger.tags["promotion.reason"].startswith("champion unusable: refusing to load the model at models:/attnlab-date/1")
    assert "differs from the one attnlab installs" in client.get_model_version("attnlab-date", "1").tags["attnlab.unusable"]

    code, out, err = attnlab(capsys, "runs")
    assert code == 0, err
    marked = [line for line in out.splitlines() if line.startswith("!")]
    assert len(marked) == 2 and marked[1].startswith("! champion, unusable (found by the last promotion): refusing to load"), out
    assert not any(line.startswith("*") for line in out.splitlines())

    code, out, err = attnlab(capsys, "predict", "25-12-2023")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "refusing to load the model" in err
