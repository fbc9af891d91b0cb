"""One predictor for every caller (attnlab predict, attnlab compare, the served model): the
sources it is asked about are bounded by the training and the test task, refused before any is
decoded, and decoded in batches without changing the answers."""

from __future__ import annotations

import pytest
import torch

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.predictor import Predictor

REVERSE = ExperimentConfig(task="reverse", task_options={"max_length": 12}, hidden_size=8, embedding_dim=8)


def _predictor(config: ExperimentConfig) -> Predictor:
    torch.manual_seed(0)
    task = build_task(config)
    return Predictor.of(config, task, build_model(config, task))


def test_a_predictor_bounds_sources_by_the_training_task_alone_without_test_options():
    predictor = _predictor(REVERSE)
    assert predictor.test_task is None and predictor.longest == 12
    assert predictor.issue("1" * 12) is None
    assert "has 13 characters; this model's task has sources of at most 12" in predictor.issue("1" * 13)


def test_a_predictor_takes_the_longer_sources_of_its_test_task():
    predictor = _predictor(REVERSE.model_copy(update={"test_task_options": {"min_length": 20, "max_length": 30}}))
    assert predictor.test_task is not None and predictor.longest == 30
    assert predictor.issue("1" * 25) is None and predictor.issue("1" * 31) is not None


def test_every_input_is_checked_before_any_is_decoded():
    predictor = _predictor(REVERSE)
    with pytest.raises(ValueError, match="has 40 characters"):
        predictor.predict(["123", "1" * 40], batch=1)
    with pytest.raises(ValueError, match="no input given"):
        predictor.check([])


def test_batches_give_the_answers_of_one_pass():
    predictor = _predictor(REVERSE)
    texts = ["1234", "4567", "8912", "3456", "1212"]  # one length: an untrained model decodes to the batch's limit
    whole = predictor.predict(texts)
    assert [p.source for p in whole] == texts
    assert [p.output for p in predictor.predict(texts, batch=2)] == [p.output for p in whole]
    assert all(p.weights is None for p in predictor.predict(texts, beam_size=2))  # beam search keeps no attention
