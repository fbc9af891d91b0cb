"""attnlab's plugin contracts and registry: the public API third-party plugins build against."""

from attnlab.plugins.attention import Attention, AttentionOutput, masked_softmax
from attnlab.plugins.decoder import AttentionFactory, Decoder, DecoderOutput, State
from attnlab.plugins.encoder import Encoder, EncoderOutput
from attnlab.plugins.registry import (
    GROUPS,
    PluginError,
    PluginInfo,
    create_plugin,
    describe_plugins,
    list_plugins,
    load_plugin,
)
from attnlab.plugins.task import Alignment, Example, Task

__all__ = [
    "GROUPS",
    "Alignment",
    "Attention",
    "AttentionFactory",
    "AttentionOutput",
    "Decoder",
    "DecoderOutput",
    "Encoder",
    "EncoderOutput",
    "Example",
    "PluginError",
    "PluginInfo",
    "State",
    "Task",
    "create_plugin",
    "describe_plugins",
    "list_plugins",
    "load_plugin",
    "masked_softmax",
]
