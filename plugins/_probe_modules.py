"""Conformance probes of the model plugins: scorers, encoders and decoders, each run once on a tiny
batch (see :mod:`attnlab.plugins._probe_base`)."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.plugins._probe_base import (
    LENGTHS,
    QUERIES,
    TARGET_STEPS,
    Subject,
    check_close,
    check_distribution,
    check_tensor,
    evaluating,
    float_like,
    overrides,
    positive_int,
    shape,
    source_mask,
)
from attnlab.plugins.attention import Attention, AttentionOutput
from attnlab.plugins.decoder import Decoder, DecoderOutput
from attnlab.plugins.encoder import Encoder, EncoderOutput
from attnlab.plugins.tokens import FIRST_CHAR_ID, PAD_ID, SOS_ID


def probe_scorer(scorer: Attention, subject: Subject | None = None) -> AttentionOutput:
    """Check a scorer on queries [3, 2, query_dim] and keys = values [3, 5, key_dim], with
    5, 3 and 1 unmasked keys per row. Returns its AttentionOutput."""
    subject = subject or Subject("scorers", type(scorer))
    dq = positive_int(subject, "attribute query_dim", getattr(scorer, "query_dim", None))
    dk = positive_int(subject, "attribute key_dim", getattr(scorer, "key_dim", None))
    dv = positive_int(subject, "attribute output_dim", getattr(scorer, "output_dim", None))
    gen = torch.Generator().manual_seed(0)
    like = float_like(scorer)
    b, lq, lk = len(LENGTHS), QUERIES, max(LENGTHS)
    query = torch.randn(b, lq, dq, generator=gen).to(**like)
    keys = torch.randn(b, lk, dk, generator=gen).to(**like)
    mask = source_mask(LENGTHS, like["device"])
    args = f"(query {shape(query)}, keys {shape(keys)}"
    with evaluating(scorer):
        if overrides(scorer, Attention, "score"):
            scores = subject.call(f"score{args})", scorer.score, query, keys)
            check_tensor(subject, f"score{args})", scores, (b, lq, lk), "[B, Lq, Lk]")
        call = f"forward{args}, values {shape(keys)}, mask {shape(mask)})"
        out = subject.call(call, scorer, query, keys, keys, mask)
        out = _attention_output(subject, call, scorer, out, mask, lq)
        one = subject.call(f"forward with one query {shape(query[:, :1])}", scorer, query[:, :1], keys, keys, mask)
        _attention_output(subject, "forward with one query (a decoder step)", scorer, one, mask, 1)
        check_close(subject, "context of a single query vs. the same query among others", one.context, out.context[:, :1])
        if overrides(scorer, Attention, "context_only"):
            context = subject.call(f"context_only{args}, values, mask)", scorer.context_only, query, keys, keys, mask)
            check_tensor(subject, "context_only(...)", context, (b, lq, dv), "[B, Lq, output_dim]")
            check_close(subject, "context_only(...) vs. forward(...).context", context, out.context)
    return out


def _attention_output(subject: Subject, call: str, scorer: Attention, out: object, mask: Tensor, lq: int) -> AttentionOutput:
    """``out``, checked to be an AttentionOutput of ``scorer`` for ``lq`` queries over ``mask``."""
    b, lk = mask.shape
    if not isinstance(out, AttentionOutput):
        raise subject.fail(f"{call} result", "AttentionOutput(context, weights, head_weights)", type(out).__name__)
    check_tensor(subject, f"{call}: context", out.context, (b, lq, scorer.output_dim), "[B, Lq, output_dim]")
    if not getattr(scorer, "attends", True):
        if out.weights is not None:
            raise subject.fail(f"{call}: weights of a scorer with attends = False", "None", shape(out.weights))
        return out
    if out.weights is None:
        raise subject.fail(
            f"{call}: weights (set the class attribute attends = False for a scorer without weights)",
            "a tensor [B, Lq, Lk]",
            "None",
        )
    check_distribution(subject, f"{call}: weights", out.weights, mask, (b, lq, lk), "[B, Lq, Lk]")
    heads = out.head_weights
    if heads is not None:
        if not isinstance(heads, Tensor) or heads.dim() != 4:
            raise subject.fail(f"{call}: head_weights", "None or a tensor [B, H, Lq, Lk]", shape(heads))
        check_distribution(subject, f"{call}: head_weights", heads, mask, (b, heads.shape[1], lq, lk), "[B, H, Lq, Lk]")
    return out


def probe_encoder(encoder: Encoder, subject: Subject | None = None) -> tuple[EncoderOutput, Tensor, Tensor]:
    """Check an encoder on three sources of lengths 6, 4 and 1 (PAD_ID after them): outputs
    [B, Ls, output_dim] and summary [B, output_dim], finite everywhere, and a source's outputs the
    same alone as in a padded batch. Returns (output, src, src_mask)."""
    subject = subject or Subject("encoders", type(encoder))
    vocab = positive_int(subject, "attribute vocab_size", getattr(encoder, "vocab_size", None))
    dim = positive_int(subject, "attribute output_dim", getattr(encoder, "output_dim", None))
    device = float_like(encoder)["device"]
    width = min(6, getattr(encoder, "max_length", None) or 6)
    lengths = (width, max(1, width - 2), 1)
    gen = torch.Generator().manual_seed(0)
    low = FIRST_CHAR_ID if vocab > FIRST_CHAR_ID else 1
    src_mask = source_mask(lengths, device)
    src = torch.randint(low, max(vocab, low + 1), (len(lengths), width), generator=gen).to(device)
    src = src.masked_fill(~src_mask, PAD_ID)
    call = f"forward(src {shape(src)}, src_mask {shape(src_mask)})"
    with evaluating(encoder):
        out = subject.call(call, encoder, src, src_mask)
        if not isinstance(out, EncoderOutput):
            raise subject.fail(f"{call} result", "EncoderOutput(outputs, summary)", type(out).__name__)
        check_tensor(subject, f"{call}: outputs", out.outputs, (len(lengths), width, dim), "[B, Ls, output_dim]")
        check_tensor(subject, f"{call}: summary", out.summary, (len(lengths), dim), "[B, output_dim]")
        row, length = 1, lengths[1]
        alone = subject.call(
            f"forward of one source without padding, src [1, {length}]",
            encoder,
            src[row : row + 1, :length],
            src_mask[row : row + 1, :length],
        )
        if not isinstance(alone, EncoderOutput):
            raise subject.fail("forward(...) result", "EncoderOutput(outputs, summary)", type(alone).__name__)
        check_close(
            subject,
            "outputs of a source alone vs. in a padded batch (padding must not change them)",
            alone.outputs[0],
            out.outputs[row, :length],
        )
        check_close(subject, "summary of a source alone vs. in a padded batch", alone.summary[0], out.summary[row])
    return out, src, src_mask


def probe_decoder(decoder: Decoder, memory: EncoderOutput, src_mask: Tensor, subject: Subject | None = None) -> DecoderOutput:
    """Check a decoder over ``memory`` (outputs [B, Ls, memory_dim], summary [B, memory_dim]):
    ``start`` gives batch-first state tensors, ``step`` logits [B, V] and weights [B, 1, Ls] or
    None, ``forward`` logits [B, Lt, V] and weights [B, Lt, Ls] or None, the same logits as the
    steps and with or without weights."""
    subject = subject or Subject("decoders", type(decoder))
    vocab = positive_int(subject, "attribute vocab_size", getattr(decoder, "vocab_size", None))
    b, ls = src_mask.shape
    steps = min(TARGET_STEPS, getattr(decoder, "max_length", None) or TARGET_STEPS)
    gen = torch.Generator().manual_seed(1)
    low = FIRST_CHAR_ID if vocab > FIRST_CHAR_ID else 1
    tgt_in = torch.randint(low, max(vocab, low + 1), (b, steps), generator=gen).to(src_mask.device)
    tgt_in[:, 0] = SOS_ID
    with evaluating(decoder):
        state = subject.call("start(memory, src_mask)", decoder.start, memory, src_mask)
        _state(subject, "start(memory, src_mask)", state, b)
        stepped = []
        for t in range(steps):
            call = f"step(tokens [{b}], state, memory, src_mask) at step {t}"
            result = subject.call(call, decoder.step, tgt_in[:, t], state, memory, src_mask)
            if not (isinstance(result, tuple) and len(result) == 3):
                raise subject.fail(f"{call} result", "(logits, state, AttentionOutput)", shape(result))
            logits, state, attn = result
            check_tensor(subject, f"{call}: logits", logits, (b, vocab), "[B, V]")
            _state(subject, f"{call}: state", state, b)
            if not isinstance(attn, AttentionOutput):
                raise subject.fail(f"{call}: attention", "AttentionOutput", type(attn).__name__)
            if attn.weights is not None:
                check_distribution(subject, f"{call}: weights", attn.weights, src_mask, (b, 1, ls), "[B, 1, Ls]")
            stepped.append(logits)
        call = f"forward(tgt_in {shape(tgt_in)}, memory, src_mask)"
        out = subject.call(call, decoder, tgt_in, memory, src_mask, need_weights=True)
        if not isinstance(out, DecoderOutput):
            raise subject.fail(f"{call} result", "DecoderOutput(logits, weights, head_weights)", type(out).__name__)
        check_tensor(subject, f"{call}: logits", out.logits, (b, steps, vocab), "[B, Lt, V]")
        if out.weights is not None:
            check_distribution(subject, f"{call}: weights", out.weights, src_mask, (b, steps, ls), "[B, Lt, Ls]")
        check_close(subject, "forward(...) logits vs. the same tokens fed to step() one by one", out.logits, torch.stack(stepped, dim=1))
        quick = subject.call(f"{call[:-1]}, need_weights=False)", decoder, tgt_in, memory, src_mask, need_weights=False)
        if not isinstance(quick, DecoderOutput):
            raise subject.fail("forward(..., need_weights=False) result", "DecoderOutput", type(quick).__name__)
        check_close(subject, "forward(..., need_weights=False) logits vs. need_weights=True", quick.logits, out.logits)
    return out


def _state(subject: Subject, what: str, state: object, batch: int) -> None:
    """A decoding state is a tuple of tensors whose first axis is the batch (beam search reorders it)."""
    if not isinstance(state, tuple) or not all(isinstance(part, Tensor) for part in state):
        raise subject.fail(what, "a tuple of tensors", shape(state))
    for part in state:
        if part.dim() == 0 or part.shape[0] != batch:
            raise subject.fail(f"{what}: every state tensor batch-first", f"first axis {batch}", shape(part))
