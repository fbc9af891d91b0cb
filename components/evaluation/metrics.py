"""Evaluation: predictions for a split and the metrics a lab reports about them.

Output metrics come from free-running decoding (greedy or beam). Attention metrics come from
one teacher-forced pass over the gold targets, so step t's weights are compared with the gold
alignment of target character t (the measures of :mod:`attnlab.evaluation.alignment`); the erasure tests
(:mod:`attnlab.evaluation.erasure`) ask whether the attended position is the one the output depends on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd
import torch
from rapidfuzz.distance import Levenshtein
from torch import Tensor

from attnlab.data.splits import EncodedExamples, encode_examples
from attnlab.evaluation.alignment import AlignmentTally
from attnlab.evaluation.edit_distance import closest_index, sequence_error_rate, token_error_rate
from attnlab.evaluation.erasure import erasure_metrics
from attnlab.evaluation.explanation_measures import explanation_metrics
from attnlab.model.assembly import Seq2Seq
from attnlab.model.cpu_settings import release_freed_memory
from attnlab.model.decode import beam_search, default_max_length, greedy_decode
from attnlab.plugins import Example

#: Hypotheses decoded at a time: rows with greedy decoding, rows x beam size with beam search;
#: rows of a teacher-forced pass. A step's tensors grow with it (an additive scorer's [rows, Ls,
#: A] sums: 14 MB at 256 rows, Ls 28, A 512; the evaluation's peak, with the encoder outputs).
DECODE_BATCH = 256


@dataclass(frozen=True)
class Evaluation:
    """metrics: name -> float; per_length: one row per source-length bucket; predictions: one
    row per distinct source (source, target, prediction, correct, edits, tokens, source_length;
    see :func:`output_scores`); alignment_offsets:
    share of aligned steps per offset (offset, steps, share; see
    :meth:`attnlab.evaluation.alignment.AlignmentTally.offset_table`), None for a scorer that does not
    attend or a task without alignments; greedy_correct: greedy decoding's verdict on each row of
    ``predictions`` (the same as ``correct`` when the evaluation was greedy); explanations: the
    explanations' table (:func:`with_explanations`), None when none were scored."""

    metrics: dict[str, float]
    per_length: pd.DataFrame
    predictions: pd.DataFrame
    alignment_offsets: pd.DataFrame | None = None
    greedy_correct: list[bool] | None = None
    explanations: pd.DataFrame | None = None


def with_explanations(evaluation: Evaluation, table: pd.DataFrame) -> Evaluation:
    """``evaluation`` with the explanations' table (:func:`attnlab.evaluation.explanation_measures.explanation_table`)
    as ``explanations`` and its cells among the metrics (``explain_<explanation>_<measure>``)."""
    return replace(evaluation, metrics={**evaluation.metrics, **explanation_metrics(table)}, explanations=table)


def decode_texts(
    model: Seq2Seq,
    data: EncodedExamples,
    max_length: int | None = None,
    batch_size: int = DECODE_BATCH,
    beam_size: int = 1,
) -> list[str]:
    """Predicted strings for every row of ``data``, decoded ``batch_size`` hypotheses at a time:
    ``batch_size`` rows greedily, ``batch_size // beam_size`` with beam search (each row's beams
    step together, so the decoder's tensors, e.g. the encoder outputs [rows * beam_size, Ls, H],
    stay the size of a greedy batch's); ``max_length`` bounds the steps (default:
    :func:`default_max_length` of the sources)."""
    model.eval()
    max_length = max_length or default_max_length(data.src.shape[1])
    rows = max(1, batch_size // beam_size)
    texts: list[str] = []
    for start in range(0, len(data), rows):
        src = data.src[start : start + rows]
        mask = data.src_mask[start : start + rows]
        if beam_size == 1:
            tokens = greedy_decode(model, src, mask, max_length).tokens
        else:
            tokens = beam_search(model, src, mask, max_length, beam_size)
        texts.extend(model.tgt_vocab.decode(row) for row in tokens.tolist())
    return texts


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """Share of predictions equal to their target."""
    return sum(p == t for p, t in zip(predictions, targets)) / max(len(targets), 1)


def char_hits(prediction: Sequence[str], target: Sequence[str]) -> int:
    """How many target tokens (a string: its characters) the prediction has at their position."""
    return sum(a == b for a, b in zip(prediction, target))


def char_accuracy(predictions: Sequence[Sequence[str]], targets: Sequence[Sequence[str]]) -> float:
    """Share of target tokens (characters of strings) predicted at their position (missing ones
    count as wrong); logged as ``char_accuracy`` whatever the tokens are."""
    hits = sum(char_hits(p, t) for p, t in zip(predictions, targets))
    return hits / max(sum(len(t) for t in targets), 1)


def length_buckets(lengths: pd.Series, max_buckets: int = 10) -> pd.Series:
    """Label each length with its bucket, e.g. "21-25"; single lengths when few distinct ones."""
    low, high = int(lengths.min()), int(lengths.max())
    width = max(1, math.ceil((high - low + 1) / max_buckets))
    start = low + (lengths - low) // width * width
    return start.map(lambda s: str(s) if width == 1 else f"{s}-{s + width - 1}")


def per_length_table(frame: pd.DataFrame, split: Callable[[str], Sequence[str]] = list) -> pd.DataFrame:
    """Accuracy per source-length bucket from a predictions frame; ``split`` cuts a target text
    into its tokens (default: characters)."""
    frame = frame.assign(bucket=length_buckets(frame["source_length"]))
    frame["char_hits"] = [char_hits(split(p), split(t)) for p, t in zip(frame["prediction"], frame["target"])]
    frame["target_chars"] = [len(split(t)) for t in frame["target"]]
    table = frame.groupby("bucket", sort=False).agg(
        min_length=("source_length", "min"),
        count=("correct", "size"),
        exact_match=("correct", "mean"),
        char_hits=("char_hits", "sum"),
        target_chars=("target_chars", "sum"),
    )
    table["char_accuracy"] = table.pop("char_hits") / table.pop("target_chars")
    return table.sort_values("min_length").reset_index().rename(columns={"bucket": "length"})


@torch.inference_mode()
def teacher_forced_attention(model: Seq2Seq, data: EncodedExamples) -> tuple[Tensor | None, Tensor]:
    """Attention over the gold targets: weights [N, Lt + 1, Ls] (None for a scorer that does
    not attend) and the target-step mask bool [N, Lt + 1] (True on real steps, EOS included)."""
    model.eval()
    tgt_in, tgt_out = data.tgt[:, :-1], data.tgt[:, 1:]
    out = model(data.src, data.src_mask, tgt_in, need_weights=True)
    return out.weights, tgt_out != 0


@dataclass
class AttentionTally:
    """Running sums behind the attention metrics, so batches combine exactly."""

    alignment: AlignmentTally = field(default_factory=AlignmentTally)
    entropy_sum: float = 0.0
    steps: int = 0
    pad_mass: float = 0.0
    attends: bool = True

    def add(self, weights: Tensor | None, step_mask: Tensor, src_mask: Tensor, examples: list[Example]) -> None:
        """weights [N, T, Ls] or None; step_mask bool [N, T]; src_mask bool [N, Ls]."""
        if weights is None:
            self.attends = False
            return
        entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)
        self.entropy_sum += float(entropy[step_mask].sum())
        self.steps += int(step_mask.sum())
        on_pad = (weights * (~src_mask).unsqueeze(1)).sum(-1)[step_mask]
        self.pad_mass = max(self.pad_mass, float(on_pad.max()) if on_pad.numel() else 0.0)
        argmax = weights.argmax(dim=-1).tolist()
        for row, example in enumerate(examples):
            self.alignment.add(argmax[row], example.alignment)

    def metrics(self) -> dict[str, float]:
        """alignment_accuracy: share of aligned target characters whose most-attended source
        position is a gold one, and the other measures of :class:`attnlab.evaluation.alignment.AlignmentTally`
        (NaN without attention or gold); attention_entropy: mean entropy (nats) of a step's
        weights; pad_attention_mass: the largest total weight any step puts on padding (must be 0)."""
        nan = math.nan
        return {
            **self.alignment.metrics(),
            "attention_entropy": self.entropy_sum / self.steps if self.attends and self.steps else nan,
            "pad_attention_mass": self.pad_mass,
        }

    def offset_table(self) -> pd.DataFrame | None:
        """The alignment offsets per step (None without an aligned step)."""
        return self.alignment.offset_table() if self.alignment.steps else None


def with_references(examples: list[Example]) -> tuple[list[Example], list[list[str]]]:
    """The first example of each distinct source, in order, and every target given for that
    source (its correct references: a word with two pronunciations has two)."""
    references: dict[str, list[str]] = {}
    firsts = []
    for example in examples:
        if example.source not in references:
            references[example.source] = []
            firsts.append(example)
        references[example.source].append(example.target)
    return firsts, [references[example.source] for example in firsts]


def score_exact_match(model: Seq2Seq, examples: list[Example], beam_size: int = 1, batch_size: int = DECODE_BATCH) -> float:
    """Share of the distinct sources of ``examples`` whose output is one of their targets,
    decoding only (what a promotion compares; the attention measures and erasure tests of
    :func:`evaluate` would cost ~1 s more a model)."""
    device = next(model.parameters()).device
    firsts, references = with_references(examples)
    data = encode_examples(firsts, model.src_vocab, model.tgt_vocab).to(device)
    outputs = decode_texts(model, data, None, batch_size, beam_size)
    return sum(output in refs for output, refs in zip(outputs, references)) / max(len(firsts), 1)


def output_scores(
    model: Seq2Seq, firsts: list[Example], references: list[list[str]], data: EncodedExamples,
    max_length: int | None, batch_size: int, beam_size: int,
) -> tuple[pd.DataFrame, dict[str, float], list[list[str]]]:  # fmt: skip
    """Decode ``data`` (one row per distinct source, ``firsts``; ``references``: each source's
    targets) and score the outputs: (one row per source: source, target (the closest
    reference), prediction, correct, edits (the Levenshtein distance of the output's tokens to
    the closest reference's) and tokens (of that reference); exact match, char accuracy, token and sequence error rate;
    the predicted tokens)."""
    predictions = decode_texts(model, data, max_length, batch_size, beam_size)
    split = model.tgt_vocab.split
    predicted_tokens = [split(p) for p in predictions]
    reference_tokens = [[split(t) for t in refs] for refs in references]
    # Each output is measured against its closest reference (the one it equals, when right).
    chosen = [closest_index(out, tokens) for out, tokens in zip(predicted_tokens, reference_tokens)]
    closest = [refs[i] for refs, i in zip(references, chosen)]
    frame = pd.DataFrame(
        {
            "source": [ex.source for ex in firsts],
            "target": closest,
            "prediction": predictions,
            "correct": [p in refs for p, refs in zip(predictions, references)],
            "edits": [Levenshtein.distance(out, tokens[i]) for out, tokens, i in zip(predicted_tokens, reference_tokens, chosen)],
            "tokens": [len(tokens[i]) for tokens, i in zip(reference_tokens, chosen)],
        }
    )
    metrics = {
        "exact_match": float(frame["correct"].mean()) if len(frame) else 0.0,
        "char_accuracy": char_accuracy(predicted_tokens, [split(t) for t in closest]),
        "token_error_rate": token_error_rate(predicted_tokens, reference_tokens),
        "sequence_error_rate": sequence_error_rate(predicted_tokens, reference_tokens),
    }
    return frame, metrics, predicted_tokens


def evaluate(
    model: Seq2Seq,
    examples: list[Example],
    beam_size: int = 1,
    batch_size: int = DECODE_BATCH,
    max_length: int | None = None,
) -> Evaluation:
    """Decode ``examples`` (greedy, or beam search with ``beam_size`` > 1) and compute every
    metric, the erasure tests on a fixed sample of them (:func:`attnlab.evaluation.erasure.erasure_metrics`);
    ``max_length`` bounds the decoding steps. A beam search evaluation also decodes greedily and
    reports those output metrics as ``greedy_<name>`` (what beam search adds, side by side).

    The output metrics count each distinct source once, right when it equals any of the targets
    given for that source (:func:`with_references`); the attention metrics use every example."""
    device = next(model.parameters()).device
    firsts, references = with_references(examples)
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab).to(device)
    unique = data if len(firsts) == len(examples) else encode_examples(firsts, model.src_vocab, model.tgt_vocab).to(device)
    frame, metrics, _ = output_scores(model, firsts, references, unique, max_length, batch_size, beam_size)
    frame["source_length"] = [len(model.src_vocab.split(ex.source)) for ex in firsts]
    greedy_correct = frame["correct"].tolist()
    if beam_size > 1:
        greedy, greedy_metrics, _ = output_scores(model, firsts, references, unique, max_length, batch_size, 1)
        metrics.update({f"greedy_{name}": value for name, value in greedy_metrics.items()})
        greedy_correct = greedy["correct"].tolist()
    tally = AttentionTally()
    for start in range(0, len(data), batch_size):
        chunk = data.rows(slice(start, start + batch_size))
        weights, step_mask = teacher_forced_attention(model, chunk)
        tally.add(weights, step_mask, chunk.src_mask, examples[start : start + batch_size])
    metrics.update(tally.metrics())
    metrics.update(erasure_metrics(model, examples))
    split = model.tgt_vocab.split
    release_freed_memory()
    return Evaluation(metrics, per_length_table(frame, split), frame, tally.offset_table(), greedy_correct)
