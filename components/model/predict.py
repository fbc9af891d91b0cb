"""Predictions on raw strings, with the attention behind each one."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.data.sources import source_problem
from attnlab.data.vocab import EOS, pad_batch
from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import Decoded, beam_search, default_max_length, greedy_decode
from attnlab.plugins import Task
from attnlab.plugins.task import shown
from attnlab.plugins.tokens import unit_name


@dataclass(frozen=True)
class Prediction:
    """One input and its output.

    weights: [len(output_tokens), len(source_tokens)] nested lists, or None without attention;
    head_weights: [H, len(output_tokens), len(source_tokens)] for a multi-head scorer.
    output_tokens ends with "<eos>" when the model emitted it.
    """

    source: str
    output: str
    source_tokens: list[str]
    output_tokens: list[str]
    weights: list[list[float]] | None
    head_weights: list[list[list[float]]] | None


def source_limit(task: Task, test_task: Task | None = None) -> int:
    """The longest source a model is asked about: the longest its task produces for training or,
    with a ``test_task`` (``test_task_options``), for testing (a test split may hold longer
    sources than training saw)."""
    longest = task.max_source_length
    return longest if test_task is None else max(longest, test_task.max_source_length)


def source_issue(text: str, task: Task, model: Seq2Seq, longest: int | None = None, test_task: Task | None = None) -> str | None:
    """Why the task or the model cannot take ``text`` (naming it), or None.

    ``longest``: the longest source accepted (see :func:`source_limit`; None: only the encoder's
    own limit). Decoding runs 2 steps per source token, so an unbounded input runs for minutes.
    ``test_task``: the task of ``test_task_options``, see :func:`attnlab.data.sources.source_problem`.
    """
    length = len(model.src_vocab.split(text))
    unit = unit_name(model.src_vocab.tokenization)
    if longest is not None and length > longest:
        return f"{shown(text)} has {length} {unit}; this model's task has sources of at most {longest}"
    problem = source_problem(text, task, test_task)
    if problem is not None:
        return problem
    limit = model.max_source_length
    if limit is not None and length > limit:
        return f"{shown(text)} has {length} {unit}; this model accepts at most {limit}"
    return None


def check_sources(texts: list[str], task: Task, model: Seq2Seq, longest: int | None = None, test_task: Task | None = None) -> None:
    """Raise ValueError naming the first input that the task or the model cannot take (see
    :func:`source_issue`)."""
    if not texts:
        raise ValueError("no input given; pass at least one source string")
    for text in texts:
        problem = source_issue(text, task, model, longest, test_task)
        if problem is not None:
            raise ValueError(problem)


def predict(
    model: Seq2Seq,
    task: Task,
    texts: list[str],
    max_length: int | None = None,
    longest: int | None = None,
    test_task: Task | None = None,
    beam_size: int = 1,
) -> list[Prediction]:
    """Predictions for ``texts`` as one batch, greedy or, with ``beam_size`` > 1, by beam search
    (:func:`attnlab.model.decode.beam_search`, which keeps no attention: weights are None); validates
    them first (see check_sources)."""
    check_sources(texts, task, model, longest, test_task)
    device = next(model.parameters()).device
    src, mask = pad_batch([model.src_vocab.encode(text) for text in texts])
    steps = max_length or default_max_length(src.shape[1])
    model.eval()
    if beam_size > 1:
        decoded = Decoded(beam_search(model, src.to(device), mask.to(device), steps, beam_size), None, None)
    else:
        decoded = greedy_decode(model, src.to(device), mask.to(device), steps)
    results = []
    for row, text in enumerate(texts):
        tokens = decoded.tokens[row].tolist()
        length = next((i + 1 for i, tok in enumerate(tokens) if tok == EOS), len(tokens))
        out_tokens = [model.tgt_vocab.token(tok) for tok in tokens[:length]]
        source_tokens = model.src_vocab.split(text)
        weights = heads = None
        if decoded.weights is not None:
            weights = decoded.weights[row, :length, : len(source_tokens)].tolist()
        if decoded.head_weights is not None:
            heads = decoded.head_weights[row, :, :length, : len(source_tokens)].tolist()
        results.append(Prediction(text, model.tgt_vocab.decode(tokens), source_tokens, out_tokens, weights, heads))
    return results
