"""Error rates of a checkpoint's beam search with its final hypotheses ranked by length-normalised
score (:func:`length_normalised_best`), the length penalty chosen on the validation split.

Beam search runs once per split; each length penalty alpha only ranks its k final hypotheses
again (summed log-probability / length ** alpha), so trying many costs no more decoding. The
validation split gives every alpha's WER and PER, and the alpha with the lowest WER (the
smallest on a tie) is the chosen one; the test split is then scored with alpha 0 (the search's
own best) and the chosen alpha only.

Run: python benchmarks/length_penalty_wer.py CHECKPOINT.pt [--beam-size 5] [--alphas 0,0.25,0.5,0.75,1,1.5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch import Tensor

from attnlab.data.splits import encode_examples
from attnlab.data.vocab import EOS
from attnlab.evaluation.edit_distance import sequence_error_rate, token_error_rate
from attnlab.evaluation.metrics import DECODE_BATCH, with_references
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_model
from attnlab.model.bundle import load_weights
from attnlab.model.decode import Beams, beam_hypotheses, default_max_length
from attnlab.plugins import Example
from attnlab.training.experiment import prepare_data


def length_normalised_best(beams: Beams, alpha: float) -> Tensor:
    """Each source's best of its finished hypotheses (those that emitted EOS; all of them where
    none did) by summed log-probability / length ** ``alpha``, length counting EOS: long [B, T].

    A summed log-probability only falls with every token, so beam search prefers short outputs;
    dividing by the length ** alpha (alpha > 0) weighs that preference down. Only the k
    hypotheses the search ended with (tokens [B, k, T], scores [B, k]) are ranked again."""
    tokens, scores = beams.tokens, beams.scores
    is_eos = tokens == EOS
    finished = is_eos.any(dim=2)  # [B, k]
    lengths = torch.where(finished, is_eos.int().argmax(dim=2) + 1, tokens.shape[2]).to(scores.dtype)
    ranked = scores / lengths.clamp(min=1) ** alpha
    eligible = finished | ~finished.any(dim=1, keepdim=True)
    best = ranked.masked_fill(~eligible, float("-inf")).argmax(dim=1)  # [B]
    return tokens[torch.arange(tokens.shape[0], device=tokens.device), best]


def error_rates(model: Seq2Seq, examples: list[Example], beam_size: int, alphas: list[float]) -> dict[float, tuple[float, float]]:
    """alpha -> (WER, PER) of beam search on the distinct sources of ``examples``, each output
    measured against every target given for its source."""
    firsts, references = with_references(examples)
    data = encode_examples(firsts, model.src_vocab, model.tgt_vocab)
    steps = default_max_length(data.src.shape[1])
    rows = max(1, DECODE_BATCH // beam_size)
    outputs: dict[float, list[list[str]]] = {alpha: [] for alpha in alphas}
    split = model.tgt_vocab.split
    with torch.inference_mode():
        for start in range(0, len(data), rows):
            beams = beam_hypotheses(model, data.src[start : start + rows], data.src_mask[start : start + rows], steps, beam_size)
            for alpha in alphas:
                tokens = beams.tokens[:, 0] if alpha == 0 else length_normalised_best(beams, alpha)
                outputs[alpha].extend(split(model.tgt_vocab.decode(row)) for row in tokens.tolist())
    targets = [[split(t) for t in refs] for refs in references]
    return {alpha: (sequence_error_rate(out, targets), token_error_rate(out, targets)) for alpha, out in outputs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--alphas", default="0,0.25,0.5,0.75,1,1.5", help="length penalties to try, comma-separated")
    args = parser.parse_args()
    alphas = sorted({float(a) for a in args.alphas.split(",")} | {0.0})
    state = load_weights(args.checkpoint)
    config = ExperimentConfig.model_validate(state["config"])
    task, splits = prepare_data(config)
    model = build_model(config, task, probe=False)
    model.load_state_dict(state["model"])
    model.eval()
    print(
        f"{args.checkpoint.name}: {config.encoder}/{config.decoder} after {len(state['history'])} of {config.epochs} epochs, beam {args.beam_size}"
    )
    started = time.perf_counter()
    validation = error_rates(model, splits.validation, args.beam_size, alphas)
    chosen = min(alphas, key=lambda alpha: (validation[alpha][0], alpha))
    print(f"validation ({len({ex.source for ex in splits.validation}):,} words):")
    for alpha, (wer, per) in validation.items():
        print(f"  alpha {alpha:4.2f}: WER {wer:.2%}  PER {per:.2%}{'  <- chosen' if alpha == chosen else ''}")
    test = error_rates(model, splits.test, args.beam_size, sorted({0.0, chosen}))
    print(f"test ({len({ex.source for ex in splits.test}):,} words):")
    for alpha, (wer, per) in test.items():
        print(f"  alpha {alpha:4.2f}: WER {wer:.2%}  PER {per:.2%}")
    print(f"  (scored in {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
