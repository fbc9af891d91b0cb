"""``attnlab predict --plot`` with several inputs names every file it wrote."""

from __future__ import annotations

import json

import pytest

from attnlab.flows.cli import app as cli


@pytest.mark.slow
@pytest.mark.parametrize("json_output", [False, True])
def test_predict_names_every_heatmap_it_wrote(capsys, tmp_path, json_output):
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(scorer="multihead", hidden_size=16, embedding_dim=8)
    bundle = save_bundle(tmp_path / "bundle", config, build_model(config, build_task(config)))
    plots = tmp_path / "plots"
    args = ["predict", "01-02-2003", "04-05-2006", "07-08-2009", "--model", str(bundle), "--plot", str(plots / "heatmap.png")]
    code = cli.main(args + ["--json"] * json_output)
    out, err = capsys.readouterr()
    assert code == 0, err
    written = sorted(str(p) for p in plots.iterdir())
    assert len(written) == 6  # a heatmap and a per-head figure for each of the three inputs
    if json_output:
        assert sorted(json.loads(out)["plots"]) == written
    else:
        assert len(out.splitlines()) == 3
        assert sorted(line.removeprefix("saved ") for line in err.splitlines() if line.startswith("saved ")) == written
