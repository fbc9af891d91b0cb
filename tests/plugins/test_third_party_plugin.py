"""A third-party scorer, shipped as its own distribution, is found, listed and trains,
with no change to attnlab."""

from __future__ import annotations

from attnlab.config import ExperimentConfig
from attnlab.experiment import run_experiment
from attnlab.plugins import describe_plugins, list_plugins, load_plugin

COSINE = '''
import torch.nn.functional as F
from attnlab.plugins import Attention

class CosineAttention(Attention):
    """Cosine similarity between query and keys, sharpened by a fixed temperature."""

    def score(self, query, keys):
        return 10.0 * F.normalize(query, dim=-1) @ F.normalize(keys, dim=-1).transpose(1, 2)
'''


def test_cosine_scorer_from_another_distribution_trains(make_distribution):
    make_distribution(
        "thirdparty-cosine",
        {"attnlab.scorers": {"cosine": "thirdparty_cosine:CosineAttention"}},
        {"thirdparty_cosine.py": COSINE},
    )
    assert "cosine" in list_plugins("scorers")
    (info,) = [i for i in describe_plugins("scorers") if i.name == "cosine"]
    assert info.distribution == "thirdparty-cosine 1.0"
    assert load_plugin("scorers", "cosine").__name__ == "CosineAttention"

    config = ExperimentConfig(
        scorer="cosine", hidden_size=64, embedding_dim=32, train_size=2000, validation_size=100,
        test_size=200, epochs=4, batch_size=64, target_exact_match=None,
    )
    result = run_experiment(config)
    first, last = result.training.history[0], result.training.history[-1]
    assert last["train_loss"] < first["train_loss"] / 2
    assert result.evaluation.metrics["char_accuracy"] > 0.9
    assert result.evaluation.metrics["pad_attention_mass"] == 0.0
