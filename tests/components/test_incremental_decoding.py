"""Incremental transformer decoding: the cached steps decode what the steps that re-read their
prefix decoded (greedy tokens and attention, beam search), beam search reorders the cache with the
hypotheses it keeps, and a decoder whose state holds no cache still decodes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.data.splits import encode_examples
from attnlab.data.vocab import EOS, SOS
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq
from attnlab.model.decode import beam_hypotheses, beam_search, greedy_decode
from attnlab.plugins import PAD_ID, AttentionOutput, Decoder, DecoderOutput
from attnlab.plugins.builtin.scorers import MultiHeadAttention
from attnlab.plugins.testing import check_decoder
from attnlab.training.experiment import prepare_data, train_model

STEPS = 14


@pytest.fixture(scope="module")
def trained():
    """A tiny transformer pair trained briefly on reversals of 2-9 digits, so that its outputs end at
    different steps, and 24 test sources of varied lengths as one padded batch."""
    config = ExperimentConfig(
        task="reverse", task_options={"min_length": 2, "max_length": 9}, encoder="transformer", decoder="transformer",
        scorer="multihead", scorer_options={"heads": 2}, encoder_options={"heads": 2, "layers": 1},
        decoder_options={"heads": 2, "layers": 2, "dropout": 0.0}, embedding_dim=8, hidden_size=16,
        train_size=600, validation_size=20, test_size=24, epochs=2, target_exact_match=None, device="cpu",
    )  # fmt: skip
    task, splits = prepare_data(config)
    model, _ = train_model(config, task, splits)
    model.eval()
    data = encode_examples(splits.test, model.src_vocab, model.tgt_vocab)
    assert len(set(data.src_mask.sum(1).tolist())) >= 5  # varied lengths in one batch
    return model, data


def cached(model, use_cache: bool):
    model.decoder.use_cache = use_cache
    return model


def test_greedy_gives_the_same_tokens_and_attention_as_rereading_the_prefix(trained):
    model, data = trained
    before = greedy_decode(cached(model, False), data.src, data.src_mask, STEPS)
    after = greedy_decode(cached(model, True), data.src, data.src_mask, STEPS)
    assert torch.equal(after.tokens, before.tokens)
    assert (before.tokens == EOS).any(1).float().mean() > 0.5  # most outputs end within the steps
    assert len({row.index(EOS) for row in before.tokens.tolist() if EOS in row}) >= 3  # at different steps
    torch.testing.assert_close(after.weights, before.weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(after.head_weights, before.head_weights, atol=1e-6, rtol=1e-5)
    assert after.head_weights.shape == (len(data), 2, before.tokens.shape[1], data.src.shape[1])


@pytest.mark.parametrize("beam_size", [1, 3, 5])
def test_beam_search_gives_the_same_tokens_as_rereading_the_prefix(trained, beam_size):
    model, data = trained
    before = beam_hypotheses(cached(model, False), data.src, data.src_mask, STEPS, beam_size)
    after = beam_hypotheses(cached(model, True), data.src, data.src_mask, STEPS, beam_size)
    assert torch.equal(after.tokens, before.tokens)
    torch.testing.assert_close(after.scores, before.scores, atol=1e-4, rtol=1e-5)
    if beam_size == 1:
        assert torch.equal(after.tokens[:, 0], greedy_decode(model, data.src, data.src_mask, STEPS).tokens)


def teacher_forced_log_prob(model, src, src_mask, tokens):
    """Summed log-probability of each row of ``tokens`` [N, T] up to its first EOS (a hypothesis left
    unfinished: up to its last token before the PAD filling), by the decoder's teacher-forced
    forward (every position at once: no cache)."""
    tgt_in = torch.cat([torch.full((tokens.shape[0], 1), SOS), tokens[:, :-1]], dim=1)
    with torch.no_grad():
        logp = model(src, src_mask, tgt_in).logits.log_softmax(-1)
    picked = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    is_eos = (tokens == EOS).long()
    before_end = (is_eos.cumsum(1) - is_eos) == 0  # the tokens up to and including the first EOS
    filled = (tokens != PAD_ID).flip(1).long().cumsum(1).flip(1) == 0  # the PAD after the last token
    return (picked * (before_end & ~filled)).sum(1)


@pytest.mark.parametrize("beam_size", [3, 5])
def test_every_kept_hypothesis_scores_what_its_tokens_score_teacher_forced(trained, beam_size):
    """A hypothesis's score adds the step log-probabilities computed from its cache: a cache row left
    with another hypothesis's keys and values after a reorder gives another sum."""
    model, data = trained
    beams = beam_hypotheses(cached(model, True), data.src, data.src_mask, STEPS, beam_size)
    k = beam_size
    src, src_mask = data.src.repeat_interleave(k, dim=0), data.src_mask.repeat_interleave(k, dim=0)
    expected = teacher_forced_log_prob(model, src, src_mask, beams.tokens.flatten(0, 1)).view(-1, k)
    torch.testing.assert_close(beams.scores, expected, atol=1e-4, rtol=1e-5)
    assert len({tuple(row) for row in beams.tokens.flatten(0, 1).tolist()}) > len(data)  # the beams differ


class PrefixDecoder(Decoder):
    """A third-party decoder without a cache, written against the public contract only: causal
    self-attention (torch's own layer) then cross-attention through the scorer, its state the
    prefix, which every step runs again (as the transformer decoded before its cache)."""

    def __init__(self, vocab_size, embedding_dim, hidden_size, memory_dim, make_attention, **options):
        super().__init__(vocab_size, embedding_dim, hidden_size, memory_dim, make_attention, **options)
        self.embedding = nn.Embedding(vocab_size, hidden_size, padding_idx=PAD_ID)
        self.positions = nn.Embedding(STEPS, hidden_size)
        self.self_attention = nn.TransformerEncoderLayer(hidden_size, 2, 2 * hidden_size, dropout=0.0, batch_first=True)
        self.cross = make_attention(hidden_size, memory_dim)
        self.out = nn.Linear(hidden_size + self.cross.output_dim, vocab_size)

    def _run(self, tgt_in, memory, src_mask):
        length = tgt_in.shape[1]
        x = self.embedding(tgt_in) + self.positions.weight[:length]
        causal = nn.Transformer.generate_square_subsequent_mask(length)
        x = self.self_attention(x, src_mask=causal, is_causal=True)
        attn = self.cross(x, memory.outputs, memory.outputs, src_mask)
        return self.out(torch.cat([x, attn.context], dim=-1)), attn

    def forward(self, tgt_in, memory, src_mask, need_weights=True):
        logits, attn = self._run(tgt_in, memory, src_mask)
        return DecoderOutput(logits, attn.weights if need_weights else None, attn.head_weights if need_weights else None)

    def start(self, memory, src_mask):
        return (memory.summary.new_zeros(memory.summary.shape[0], 0, dtype=torch.long),)

    def step(self, tokens, state, memory, src_mask):
        prefix = torch.cat([state[0], tokens.unsqueeze(1)], dim=1)
        logits, attn = self._run(prefix, memory, src_mask)
        weights, heads = attn.weights, attn.head_weights
        last = AttentionOutput(
            attn.context[:, -1:], None if weights is None else weights[:, -1:], None if heads is None else heads[:, :, -1:]
        )
        return logits[:, -1], (prefix,), last


def test_a_decoder_without_a_cache_still_decodes(trained):
    """Greedy and beam search through a decoder whose state is its prefix: beam 1 is greedy, and
    every kept hypothesis scores what its tokens score teacher-forced."""
    check_decoder(PrefixDecoder)
    model, data = trained
    decoder = model.decoder
    torch.manual_seed(0)
    make_attention = lambda q, k: MultiHeadAttention(q, k, heads=2)  # noqa: E731
    prefix = PrefixDecoder(decoder.vocab_size, 8, 16, decoder.memory_dim, make_attention).eval()
    with torch.no_grad():
        prefix.out.bias[PAD_ID] = -30.0  # as a trained decoder, it does not emit PAD
    third_party = Seq2Seq(model.encoder, prefix, model.src_vocab, model.tgt_vocab).eval()
    greedy = greedy_decode(third_party, data.src, data.src_mask, STEPS)
    assert greedy.head_weights.shape == (len(data), 2, greedy.tokens.shape[1], data.src.shape[1])
    assert torch.equal(beam_search(third_party, data.src, data.src_mask, STEPS, 1), greedy.tokens)
    beams = beam_hypotheses(third_party, data.src, data.src_mask, STEPS, 3)
    src, src_mask = data.src.repeat_interleave(3, dim=0), data.src_mask.repeat_interleave(3, dim=0)
    expected = teacher_forced_log_prob(third_party, src, src_mask, beams.tokens.flatten(0, 1)).view(-1, 3)
    torch.testing.assert_close(beams.scores, expected, atol=1e-4, rtol=1e-5)


@torch.inference_mode()
def stepping_every_row(model, src, src_mask, max_length, beam_size):
    """Beam search as it was before sources stopped once decided: every hypothesis of every source
    steps until all have ended or ``max_length``; beam_size 1 is greedy. The best tokens [B, T]."""
    batch, k = src.shape[0], beam_size
    memory = model.encode(src, src_mask)
    memory = type(memory)(*(m.repeat_interleave(k, dim=0) for m in memory))
    mask = src_mask.repeat_interleave(k, dim=0)
    state = model.decoder.start(memory, mask)
    tokens = torch.full((batch * k,), SOS)
    scores = torch.full((batch, k), float("-inf"))
    scores[:, 0] = 0.0
    history, done = torch.empty(batch * k, 0, dtype=torch.long), torch.zeros(batch * k, dtype=torch.bool)
    for _ in range(max_length):
        logits, state, _ = model.decoder.step(tokens, state, memory, mask)
        logp = torch.log_softmax(logits, -1).masked_fill(done.unsqueeze(1), float("-inf"))
        logp[:, PAD_ID] = torch.where(done, 0.0, logp[:, PAD_ID])
        scores, flat = (scores.view(-1, 1) + logp).view(batch, -1).topk(k, dim=1)
        parent = (torch.arange(batch).unsqueeze(1) * k + flat // logp.shape[1]).view(-1)
        tokens = (flat % logp.shape[1]).view(-1)
        state = tuple(s.index_select(0, parent) for s in state)
        history = torch.cat([history[parent], tokens.unsqueeze(1)], dim=1)
        done = done[parent] | (tokens == EOS)
        if bool(done.all()):
            break
    return history.view(batch, k, -1)[:, 0]


@pytest.mark.parametrize("beam_size", [1, 3, 5])
def test_rows_dropped_once_decided_change_no_output(trained, beam_size):
    """Greedy drops rows past their EOS, beam search the sources whose best is decided: the outputs
    are those of stepping every row to the end (PAD beyond them)."""
    model, data = trained
    expected = stepping_every_row(cached(model, True), data.src, data.src_mask, STEPS, beam_size)
    stepped = []
    step = model.decoder.step
    model.decoder.step = lambda tokens, *rest: stepped.append(len(tokens)) or step(tokens, *rest)
    try:
        if beam_size == 1:
            got = greedy_decode(model, data.src, data.src_mask, STEPS).tokens
        else:
            got = beam_search(model, data.src, data.src_mask, STEPS, beam_size)
    finally:
        del model.decoder.step
    assert torch.equal(got, expected[:, : got.shape[1]]) and bool((expected[:, got.shape[1] :] == PAD_ID).all())
    assert stepped[0] == len(data) * beam_size and stepped[-1] <= stepped[0] // 4  # rows were dropped
