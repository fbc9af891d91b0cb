"""One loaded model ready to predict: the checks every caller makes before decoding, made once.

``attnlab predict``, ``attnlab compare --plot`` and the served MLflow model all take a model
(config, task plugin, Seq2Seq), bound the sources it is asked about (:func:`source_limit`, the
test task's longer sources included), refuse what it cannot take, then decode; a
:class:`Predictor` holds the first two and does the last two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_task
from attnlab.model.bundle import bundle_tasks, load_bundle
from attnlab.model.predict import (
    Prediction,
    check_sources,
    predict,
    source_issue,
    source_limit,
)
from attnlab.plugins import Task


@dataclass(frozen=True)
class Predictor:
    """A model and what bounds its inputs: ``test_task`` is the task of the config's
    ``test_task_options`` (None without them), ``longest`` the longest source it is asked about."""

    config: ExperimentConfig
    task: Task
    model: Seq2Seq
    test_task: Task | None
    longest: int

    @classmethod
    def of(cls, config: ExperimentConfig, task: Task, model: Seq2Seq, test_task: Task | None = None) -> Predictor:
        """The predictor of a model in memory; its test task built from the config when it has
        test options and none is given."""
        if test_task is None and config.test_task_options:
            test_task = build_task(config, split="test")
        return cls(config, task, model, test_task, source_limit(task, test_task))

    @classmethod
    def load(cls, folder: Path, device: str | torch.device = "cpu") -> Predictor:
        """The predictor of bundle ``folder`` (:func:`attnlab.model.bundle.load_bundle`): a model of a
        task that reads data takes the tasks it saved, never its training data."""
        config, task, model = load_bundle(folder, device)
        _, test_task = bundle_tasks(folder, config)
        return cls.of(config, task, model, test_task)

    def issue(self, text: str) -> str | None:
        """Why the model cannot take ``text`` (naming it), or None (see :func:`source_issue`)."""
        return source_issue(text, self.task, self.model, self.longest, self.test_task)

    def check(self, texts: list[str]) -> None:
        """Raise ValueError naming the first of ``texts`` the model cannot take, or for none."""
        check_sources(texts, self.task, self.model, self.longest, self.test_task)

    def predict(self, texts: list[str], beam_size: int = 1, batch: int | None = None) -> list[Prediction]:
        """The predictions of ``texts``, greedy or by beam search with ``beam_size`` beams (no
        attention weights then), decoded ``batch`` texts at a time (None: all at once); ValueError
        naming the first of them the model cannot take (:meth:`check`) before any is decoded."""
        self.check(texts)
        size = batch or len(texts)
        results: list[Prediction] = []
        for start in range(0, len(texts), size):
            part = texts[start : start + size]
            results.extend(predict(self.model, self.task, part, longest=self.longest, test_task=self.test_task, beam_size=beam_size))
        return results
