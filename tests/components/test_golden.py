"""Golden numbers: the default model family (gru encoder, rnn decoder, scaled_dot scorer, date
task) trained at a fixed seed on the CPU. A change to these numbers is a change to the arithmetic
of the default run: re-measure them only when that change is intended, and say so."""

from __future__ import annotations

import pytest
import torch

from attnlab.evaluation.explanation_measures import explanation_metrics, explanation_table
from attnlab.lab.config import ExperimentConfig
from attnlab.training.experiment import run_experiment

CONFIG = ExperimentConfig(
    hidden_size=16, embedding_dim=8, train_size=512, validation_size=32, test_size=64, batch_size=32,
    epochs=5, learning_rate=0.02, target_exact_match=None, device="cpu",
)  # fmt: skip

# (train_loss, val_loss, val_exact_match) per epoch, measured with one thread
HISTORY = [
    (2.052090108394623, 1.4870375394821167, 0.0),
    (1.1328475289046764, 0.8698980212211609, 0.0),
    (0.7643520683050156, 0.687645435333252, 0.0),
    (0.5969051346182823, 0.567473828792572, 0.0625),
    (0.47689041681587696, 0.4389258921146393, 0.0625),
]
TEST_METRICS = {
    "exact_match": 11 / 64,
    "char_accuracy": 0.8309659090909091,
    "alignment_accuracy": 0.314453125,
    "attention_entropy": 2.1231331825256348,
    "pad_attention_mass": 0.0,
}
# The alignment measures and erasure tests (added later; the numbers above did not move): 512
# aligned steps (64 dates x 8 digits), every test example probed.
ATTENTION_METRICS = {
    "alignment_within_one": 289 / 512,
    "alignment_offset_mode": 0.0,
    "alignment_shifted_accuracy": 161 / 512,
    "alignment_error_rate": 351 / 512,
    "erasure_examples": 64.0,
    "erasure_flip_top": 105 / 512,
    "erasure_flip_random": 33 / 512,
    "erasure_flip_gold": 108 / 512,
    "erasure_drop_top": 0.0699272349011153,
    "erasure_drop_random": -0.002636992430780083,
    "erasure_drop_gold": 0.10088257677853107,
}
# The edit-distance metrics (added later; the numbers above did not move): 117 edits over 704
# target characters (64 dates x 11), 53 of the 64 outputs wrong.
EDIT_METRICS = {"token_error_rate": 117 / 704, "sequence_error_rate": 53 / 64}
# The explanations' table on the config's 30 examples, integrated gradients over its 16 points
# (added later; the numbers above did not move): 240 aligned steps (30 dates x 8 digits) for the
# alignment columns, 360 steps (12 target tokens each) for the erasure ones.
EXPLANATION_METRICS = {
    "explain_examples": 30.0,
    **{f"explain_attention_{k}": v for k, v in {"within_one": 137 / 240, "shifted_accuracy": 75 / 240, "error_rate": 165 / 240,
       "comprehensiveness": 0.08127140253782272, "sufficiency": 0.11198746412992477, "flip_top1": 70 / 360}.items()},
    **{f"explain_saliency_{k}": v for k, v in {"within_one": 121 / 240, "shifted_accuracy": 73 / 240, "error_rate": 167 / 240,
       "comprehensiveness": 0.06192680820822716, "sufficiency": 0.13051462173461914, "flip_top1": 73 / 360,
       "tau_attention": 0.3659259259259259}.items()},
    **{f"explain_input_x_gradient_{k}": v for k, v in {"within_one": 139 / 240, "shifted_accuracy": 95 / 240, "error_rate": 145 / 240,
       "comprehensiveness": 0.08152778446674347, "sufficiency": 0.11815626174211502, "flip_top1": 92 / 360,
       "tau_attention": 0.27938271604938275}.items()},
    **{f"explain_integrated_gradients_{k}": v for k, v in {"within_one": 171 / 240, "shifted_accuracy": 144 / 240, "error_rate": 96 / 240,
       "comprehensiveness": 0.17121827602386475, "sufficiency": 0.0330127514898777, "flip_top1": 122 / 360,
       "tau_attention": 0.07555555555555556}.items()},
}  # fmt: skip


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_default_family_golden_numbers(one_thread):
    result = run_experiment(CONFIG)
    history = [(m["train_loss"], m["val_loss"], m["val_exact_match"]) for m in result.training.history]
    assert history == [pytest.approx(epoch, rel=1e-5, abs=1e-12) for epoch in HISTORY]
    assert result.evaluation.metrics == pytest.approx({**TEST_METRICS, **ATTENTION_METRICS, **EDIT_METRICS}, rel=1e-5, abs=1e-12)
    table = explanation_table(result.model, result.splits.test, size=CONFIG.explain_examples, steps=CONFIG.explain_steps)
    assert explanation_metrics(table) == pytest.approx(EXPLANATION_METRICS, rel=1e-5, abs=1e-12)
