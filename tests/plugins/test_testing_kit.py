"""attnlab.plugins.testing: each check catches a deliberately broken plugin and names it; good plugins pass."""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.plugins import (
    Attention,
    AttentionOutput,
    DecoderOutput,
    EncoderOutput,
    Example,
    PluginContractError,
    PluginError,
    Task,
    dot_scores,
    masked_softmax,
    weighted_sum,
)
from attnlab.plugins.builtin.decoders import RNNDecoder
from attnlab.plugins.builtin.encoders import GRUEncoder
from attnlab.plugins.builtin.reverse_task import ReverseTask
from attnlab.plugins.builtin.scorers import DotAttention
from attnlab.plugins.testing import check_decoder, check_encoder, check_plugin, check_scorer, check_task


def caught(check, cls, *needles: str, **options) -> str:
    """Run ``check(cls)``: it must raise, naming the class and every needle; returns the message."""
    with pytest.raises(PluginContractError) as info:
        check(cls, **options)
    message = str(info.value)
    assert cls.__qualname__ in message, message
    for needle in needles:
        assert needle in message, message
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- scorers


class Cosine(Attention):
    """A correct scorer: overriding score alone."""

    def __init__(self, query_dim: int, key_dim: int, temperature: float = 10.0, **options) -> None:
        super().__init__(query_dim, key_dim, **options)
        self.temperature = temperature
        self.W = nn.Linear(query_dim, key_dim, bias=False)

    def score(self, query, keys):
        return self.temperature * F.normalize(self.W(query), dim=-1) @ F.normalize(keys, dim=-1).transpose(1, 2)


class Transposed(Attention):
    def score(self, query, keys):  # [B, Lk, Lq]: the mistake of the issue
        return keys @ query.transpose(1, 2)


class NotNormalised(Attention):
    def forward(self, query, keys, values, mask=None):
        weights = 0.5 * masked_softmax(dot_scores(query, keys), mask)
        return AttentionOutput(weighted_sum(weights, values), weights)


class LeaksOntoPadding(Attention):
    def forward(self, query, keys, values, mask=None):
        weights = torch.softmax(dot_scores(query, keys), dim=-1)  # the mask is ignored
        return AttentionOutput(weighted_sum(weights, values), weights)


class ForgetsAttends(Attention):
    def forward(self, query, keys, values, mask=None):
        return AttentionOutput(torch.zeros(query.shape[0], query.shape[1], values.shape[-1]), None)


class WrongContextSize(Attention):
    def forward(self, query, keys, values, mask=None):
        weights = masked_softmax(dot_scores(query, keys), mask)
        return AttentionOutput(weighted_sum(weights, values)[..., :-1], weights)


class FastPathDiffers(DotAttention):
    def context_only(self, query, keys, values, mask=None):
        return weighted_sum(torch.softmax(dot_scores(query, keys), -1), values)  # unmasked


class UnusedLayer(DotAttention):
    def __init__(self, query_dim: int, key_dim: int, **options) -> None:
        super().__init__(query_dim, key_dim, **options)
        self.forgotten = nn.Linear(key_dim, key_dim)


class CrashesOnUnequalSizes(Attention):
    def score(self, query, keys):  # assumes query_dim == key_dim without saying so
        return query @ keys.transpose(1, 2)


def test_a_correct_scorer_passes_with_and_without_options():
    check_scorer(Cosine)
    check_scorer(Cosine, temperature=3.0)


def test_transposed_scores_are_caught():
    caught(
        check_scorer,
        Transposed,
        "score(query [3, 2, 8], keys [3, 5, 8])",
        "expected a tensor of shape [B, Lq, Lk] = [3, 2, 5]",
        "got [3, 5, 2] (transposed?)",
    )


def test_weights_not_summing_to_one_are_caught():
    caught(check_scorer, NotNormalised, "weights: rows summed over the unmasked keys", "expected 1", "0.5")


def test_weight_on_masked_keys_is_caught():
    caught(check_scorer, LeaksOntoPadding, "on masked (padding) keys", "exactly 0")


def test_weights_missing_from_an_attending_scorer_are_caught():
    caught(check_scorer, ForgetsAttends, "attends = False", "got None")


def test_wrong_context_size_is_caught():
    caught(check_scorer, WrongContextSize, "context", "[B, Lq, output_dim] = [3, 2, 8]", "got [3, 2, 7]")


def test_a_context_only_that_disagrees_with_forward_is_caught():
    caught(check_scorer, FastPathDiffers, "context_only(...) vs. forward(...).context")


def test_a_parameter_without_gradient_is_caught():
    caught(check_scorer, UnusedLayer, "parameter 'forgotten.weight'", "a non-zero gradient")


def test_a_scorer_that_silently_needs_equal_sizes_is_caught():
    caught(check_scorer, CrashesOnUnequalSizes, "with query_dim=8, key_dim=6", "must raise ValueError in __init__", "raised RuntimeError")


def test_unknown_options_are_reported_as_the_plugins():
    caught(check_scorer, Cosine, "could not be built", "colour", colour="red")


def test_the_error_is_both_an_assertion_and_a_plugin_error():
    with pytest.raises(AssertionError):
        check_scorer(Transposed)
    with pytest.raises(PluginError) as info:
        check_scorer(Transposed)
    error = info.value
    assert error.expected == "a tensor of shape [B, Lq, Lk] = [3, 2, 5]" and error.got == "[3, 5, 2] (transposed?)"
    assert "not installed as a plugin" in error.plugin


# --------------------------------------------------------------------------- encoders


class SummaryWithExtraAxis(GRUEncoder):
    def forward(self, src, src_mask):
        out = super().forward(src, src_mask)
        return EncoderOutput(out.outputs, out.summary.unsqueeze(1))


class ClaimsWrongOutputDim(GRUEncoder):
    def __init__(self, vocab_size, embedding_dim, hidden_size, **options):
        super().__init__(vocab_size, embedding_dim, hidden_size, **options)
        self.output_dim = 2 * hidden_size  # the outputs stay hidden_size wide


class AveragesOverPadding(GRUEncoder):
    def forward(self, src, src_mask):
        out = super().forward(src, src_mask)
        return EncoderOutput(out.outputs, out.outputs.mean(dim=1))  # padding counts


class ReturnsPlainTuple(GRUEncoder):
    def forward(self, src, src_mask):
        return tuple(super().forward(src, src_mask))


class NaNOnPadding(GRUEncoder):
    def forward(self, src, src_mask):
        out = super().forward(src, src_mask)
        return EncoderOutput(out.outputs.masked_fill(~src_mask.unsqueeze(-1), float("nan")), out.summary)


def test_a_correct_encoder_passes():
    check_encoder(GRUEncoder)
    check_encoder(GRUEncoder, layers=2)


def test_wrong_encoder_output_dims_are_caught():
    caught(check_encoder, SummaryWithExtraAxis, "summary", "[B, output_dim] = [3, 8]", "got [3, 1, 8]")
    caught(check_encoder, ClaimsWrongOutputDim, "outputs", "[B, Ls, output_dim] = [3, 6, 16]", "got [3, 6, 8]")


def test_an_encoder_whose_outputs_depend_on_padding_is_caught():
    caught(check_encoder, AveragesOverPadding, "summary of a source alone vs. in a padded batch")


def test_an_encoder_returning_a_plain_tuple_is_caught():
    caught(check_encoder, ReturnsPlainTuple, "expected EncoderOutput(outputs, summary), got tuple")


def test_nan_at_padded_positions_is_caught():
    caught(check_encoder, NaNOnPadding, "outputs", "finite values")


# --------------------------------------------------------------------------- decoders


class LogitsWithStepAxis(RNNDecoder):
    def step(self, tokens, state, memory, src_mask):
        logits, state, attn = super().step(tokens, state, memory, src_mask)
        return logits.unsqueeze(1), state, attn  # [B, 1, V] instead of [B, V]


class TimeMajorForward(RNNDecoder):
    def forward(self, tgt_in, memory, src_mask, need_weights=True):
        out = super().forward(tgt_in, memory, src_mask, need_weights)
        return DecoderOutput(out.logits.transpose(0, 1), out.weights)


class StateNotBatchFirst(RNNDecoder):
    def start(self, memory, src_mask):
        return (super().start(memory, src_mask)[0].t(),)

    def step(self, tokens, state, memory, src_mask):
        return super().step(tokens, (state[0].t(),), memory, src_mask)


class FasterButDifferent(RNNDecoder):
    def forward(self, tgt_in, memory, src_mask, need_weights=True):
        out = super().forward(tgt_in, memory, src_mask, need_weights)
        return DecoderOutput(out.logits + 1.0, out.weights)


def test_a_correct_decoder_passes():
    check_decoder(RNNDecoder)
    check_decoder(RNNDecoder, cell="lstm")


def test_wrong_logits_shape_is_caught():
    caught(check_decoder, LogitsWithStepAxis, "logits", "[B, V] = [3, 13]", "got [3, 1, 13]")
    caught(check_decoder, TimeMajorForward, "logits", "[B, Lt, V] = [3, 4, 13]", "got [4, 3, 13]")


def test_a_state_that_is_not_batch_first_is_caught():
    caught(check_decoder, StateNotBatchFirst, "batch-first", "first axis 3")


def test_forward_and_step_disagreeing_is_caught():
    caught(check_decoder, FasterButDifferent, "forward(...) logits vs. the same tokens fed to step() one by one")


# --------------------------------------------------------------------------- tasks


class _Copy(Task):
    source_alphabet = "abc"
    target_alphabet = "abc"

    def sample(self, rng):
        source = "".join(rng.choice("abc") for _ in range(rng.randint(1, 5)))
        return Example(source, source, tuple((i,) for i in range(len(source))))

    @property
    def max_source_length(self) -> int:
        return 5


class AlignmentOutOfRange(_Copy):
    def sample(self, rng):
        source, target, alignment = super().sample(rng)
        return Example(source, target, tuple((i + 1,) for i in range(len(source))))


class AlignmentWithEOS(_Copy):
    def sample(self, rng):
        source, target, alignment = super().sample(rng)
        return Example(source, target, alignment + ((),))


class ForeignTargetChars(_Copy):
    def sample(self, rng):
        source, target, alignment = super().sample(rng)
        return Example(source, target.upper(), alignment)


class ForeignSourceChars(_Copy):
    source_alphabet = "ab"


class LengthAsMethod(_Copy):
    def max_source_length(self) -> int:  # type: ignore[override]
        return 5


class IgnoresTheSeed(_Copy):
    def sample(self, rng):
        return super().sample(random.Random())


class TooLong(_Copy):
    @property
    def max_source_length(self) -> int:
        return 3


class WithUnalignedChars(_Copy):
    """Empty alignment entries (a target character from no source position) are allowed."""

    target_alphabet = "abc-"

    def sample(self, rng):
        source, target, alignment = super().sample(rng)
        return Example(source, target + "-", alignment + ((),))


def test_correct_tasks_pass():
    check_task(_Copy)
    check_task(WithUnalignedChars)
    check_task(ReverseTask, min_length=2, max_length=7)


def test_task_alignment_out_of_range_is_caught():
    caught(check_task, AlignmentOutOfRange, "alignment entry", "indices in 0..")


def test_task_alignment_with_an_entry_for_eos_is_caught():
    caught(check_task, AlignmentWithEOS, "one entry per target token", "none for EOS")


def test_task_chars_outside_the_alphabet_are_caught():
    caught(check_task, ForeignTargetChars, "target_alphabet 'abc'")
    caught(check_task, ForeignSourceChars, "source_alphabet 'ab'", "got 'c'")


def test_task_max_source_length_must_be_a_property_and_hold():
    caught(check_task, LengthAsMethod, "max_source_length", "a property (add @property)")
    caught(check_task, TooLong, "at most max_source_length = 3")


def test_a_task_that_ignores_its_seed_is_caught():
    caught(check_task, IgnoresTheSeed, "the same examples", "draw only from the rng")


# --------------------------------------------------------------------------- installed plugins


def test_an_installed_plugin_is_named_with_its_distribution(make_distribution):
    make_distribution(
        "thirdparty-transposed",
        {"attnlab.scorers": {"transposed": "thirdparty_transposed:Transposed"}},
        {
            "thirdparty_transposed.py": "from attnlab.plugins import Attention\n"
            "class Transposed(Attention):\n"
            "    def score(self, query, keys):\n"
            "        return keys @ query.transpose(1, 2)\n"
        },
    )
    from thirdparty_transposed import Transposed as Installed

    for check in (lambda: check_scorer(Installed), lambda: check_plugin("scorers", "transposed")):
        with pytest.raises(PluginContractError) as info:
            check()
        assert str(info.value).startswith(
            "scorer 'transposed' (thirdparty_transposed:Transposed, from thirdparty-transposed 1.0): score("
        ), str(info.value)


def test_check_plugin_skips_plugins_whose_options_have_no_default(make_distribution):
    make_distribution(
        "thirdparty-needy",
        {"attnlab.scorers": {"needy": "thirdparty_needy:Needy"}},
        {
            "thirdparty_needy.py": "from attnlab.plugins.builtin.scorers import DotAttention\n"
            "class Needy(DotAttention):\n"
            "    def __init__(self, query_dim, key_dim, width, **options):\n"
            "        super().__init__(query_dim, key_dim, **options)\n"
        },
    )
    assert check_plugin("scorers", "needy") == "not checked: needs option(s) width"
    assert check_plugin("scorers", "needy", width=3) is None
