"""Model assembly: task, encoder, decoder and scorer plugins into one seq2seq model."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from attnlab.data.vocab import Vocab
from attnlab.lab.config import ExperimentConfig
from attnlab.model.task_choice import build_task as build_task  # re-exported: the model's task
from attnlab.plugins import (
    Attention,
    Decoder,
    DecoderOutput,
    Encoder,
    EncoderOutput,
    PluginError,
    Task,
    create_plugin,
    load_plugin,
)
from attnlab.plugins._probe_base import Subject, first_of_each
from attnlab.plugins._probe_modules import probe_decoder, probe_encoder, probe_scorer
from attnlab.plugins._probe_task import probe_task
from attnlab.plugins.options import Configurable


class Seq2Seq(nn.Module):
    """An encoder, a decoder and the vocabularies they speak.

    ``max_source_length`` is the longest source the encoder accepts (None: no limit).
    """

    def __init__(self, encoder: Encoder, decoder: Decoder, src_vocab: Vocab, tgt_vocab: Vocab):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.max_source_length: int | None = getattr(encoder, "max_length", None)

    def encode(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        """src long [B, Ls], src_mask bool [B, Ls] -> EncoderOutput."""
        memory: EncoderOutput = self.encoder(src, src_mask)
        return memory

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor,
        tgt_in: Tensor,
        teacher_forcing: float = 1.0,
        need_weights: bool = False,
    ) -> DecoderOutput:
        """Logits [B, Lt, V] for the next token at every target position.

        tgt_in: long [B, Lt], SOS followed by the target. With ``teacher_forcing`` < 1 each step
        feeds the gold previous token with that probability, else the model's own prediction.
        """
        memory = self.encode(src, src_mask)
        if teacher_forcing >= 1.0:
            decoded: DecoderOutput = self.decoder(tgt_in, memory, src_mask, need_weights=need_weights)
            return decoded
        state = self.decoder.start(memory, src_mask)
        tokens, logits = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, _ = self.decoder.step(tokens, state, memory, src_mask)
            logits.append(step_logits)
            if t + 1 < tgt_in.shape[1]:
                use_gold = torch.rand(src.shape[0], device=src.device) < teacher_forcing
                tokens = torch.where(use_gold, tgt_in[:, t + 1], step_logits.argmax(dim=-1))
        return DecoderOutput(torch.stack(logits, dim=1), None)


def build_model(config: ExperimentConfig, task: Task, vocabs: tuple[Vocab, Vocab] | None = None, probe: bool = True) -> Seq2Seq:
    """Instantiate the configured plugins into a Seq2Seq model, seeded by ``config.seed``.

    ``vocabs`` (source, target) default to the task's alphabets; a saved model passes the ones
    it was trained with. Raises PluginError for unknown plugins, options they refuse, and (with
    ``probe``, see :func:`probe_model`) plugins that break their contract.
    """
    src_vocab, tgt_vocab = vocabs or (
        Vocab.from_alphabet(task.source_alphabet, task.source_tokenization),
        Vocab.from_alphabet(task.target_alphabet, task.target_tokenization),
    )
    scorer_cls = load_plugin("scorers", config.scorer)
    torch.manual_seed(config.seed)
    encoder = create_plugin(
        "encoders",
        config.encoder,
        len(src_vocab),
        config.embedding_dim,
        config.hidden_size,
        **plugin_options(config, "encoders"),
    )

    scorers: list[Attention] = []

    def make_attention(query_dim: int, key_dim: int) -> Attention:
        try:
            scorer: Attention = scorer_cls(query_dim, key_dim, **config.scorer_options)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"scorer {config.scorer!r}: {exc}") from exc
        scorers.append(scorer)
        return scorer

    decoder = create_plugin(
        "decoders",
        config.decoder,
        len(tgt_vocab),
        config.embedding_dim,
        config.hidden_size,
        encoder.output_dim,
        make_attention,
        **plugin_options(config, "decoders"),
    )
    model = Seq2Seq(encoder, decoder, src_vocab, tgt_vocab)
    if probe:
        key = (config.model_dump_json(), type(task), type(encoder), type(decoder), scorer_cls, src_vocab, tgt_vocab)
        if key not in _probed:
            probe_model(config, task, model, scorers)
            _probed.add(key)
    return model


def plugin_options(config: ExperimentConfig, group: str) -> dict[str, Any]:
    """The options the encoder (``group`` "encoders") or decoder ("decoders") plugin of ``config`` is
    built with: its own options over ``config.dropout`` (given as the plugin's ``dropout`` option
    when set). PluginError when ``dropout`` is set and the plugin has no such option (a third
    party's): it would train without the dropout asked for."""
    kind = group.removesuffix("s")
    name, options = (config.encoder, config.encoder_options) if kind == "encoder" else (config.decoder, config.decoder_options)
    if config.dropout is None or "dropout" in options:
        return dict(options)
    plugin = load_plugin(group, name)
    if not issubclass(plugin, Configurable) or "dropout" not in plugin.option_names():
        raise PluginError(
            f"dropout={config.dropout} is given to the encoder and the decoder, and {kind} {name!r} has no dropout "
            f"option; leave dropout unset and set that plugin's own options (-o {kind}.NAME=VALUE)"
        )
    return {"dropout": config.dropout, **options}


#: What :func:`build_model` has probed in this process (config, plugin classes, vocabularies): a run
#: builds the same model several times (the config check, training, each step that loads the
#: bundle), and the plugins' classes and options, not their weights, decide the probes.
_probed: set[tuple[object, ...]] = set()


def probe_model(config: ExperimentConfig, task: Task, model: Seq2Seq, scorers: list[Attention]) -> None:
    """Run every plugin of ``model`` once on a tiny batch before anything trains on it: the task,
    the encoder, each distinct scorer the decoder built, the decoder over the encoder's output
    (``attnlab.plugins._probe_base``). A few milliseconds, without gradients, in eval mode, leaving the
    weights, the modules' modes and the global random state as they were.

    Raises PluginContractError (a PluginError) naming the plugin, its distribution, what was
    expected and what came back.
    """
    with torch.no_grad():
        probe_task(task, Subject("tasks", type(task), config.task))
        memory, _, src_mask = probe_encoder(model.encoder, Subject("encoders", type(model.encoder), config.encoder))
        for scorer in first_of_each(scorers):
            probe_scorer(scorer, Subject("scorers", type(scorer), config.scorer))
        probe_decoder(model.decoder, memory, src_mask, Subject("decoders", type(model.decoder), config.decoder))
