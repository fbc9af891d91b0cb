"""attnlab's plugin contracts and registry: the public API third-party plugins build against.

Base classes (``Attention``, ``Encoder``, ``Decoder``, ``Task``) and what they hand back;
the helpers a plugin needs (``masked_softmax``, ``dot_scores``, ``weighted_sum``, the option
validators ``require_positive_int`` and ``require_probability``); the reserved token ids
(``PAD_ID`` ...) and how a side's text is cut into tokens (``split_tokens``, ``join_tokens``); the registry; and ``PluginContractError``, raised when a plugin breaks its
contract (see ``attnlab.plugins.testing`` to check a plugin from its own tests).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlab.plugins._probe_base import PluginContractError
    from attnlab.plugins.attention import Attention, AttentionOutput, dot_scores, masked_softmax, weighted_sum
    from attnlab.plugins.decoder import AttentionFactory, Decoder, DecoderOutput, State
    from attnlab.plugins.encoder import Encoder, EncoderOutput
    from attnlab.plugins.options import require_positive_int, require_probability
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
    from attnlab.plugins.tokens import EOS_ID, PAD_ID, SOS_ID, TOKENIZATIONS, UNK_ID, join_tokens, split_tokens

#: Public name -> the module defining it. Imported on first use (PEP 562), so that the task
#: contract and the registry load without torch: ``attnlab predict`` checks its inputs first.
_WHERE = {
    **dict.fromkeys(("Attention", "AttentionOutput", "dot_scores", "masked_softmax", "weighted_sum"), "attention"),
    **dict.fromkeys(("AttentionFactory", "Decoder", "DecoderOutput", "State"), "decoder"),
    **dict.fromkeys(("Encoder", "EncoderOutput"), "encoder"),
    **dict.fromkeys(("require_positive_int", "require_probability"), "options"),
    "PluginContractError": "_probe_base",
    **dict.fromkeys(
        ("GROUPS", "PluginError", "PluginInfo", "create_plugin", "describe_plugins", "list_plugins", "load_plugin"),
        "registry",
    ),
    **dict.fromkeys(("Alignment", "Example", "Task"), "task"),
    **dict.fromkeys(("EOS_ID", "PAD_ID", "SOS_ID", "UNK_ID", "TOKENIZATIONS", "join_tokens", "split_tokens"), "tokens"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "EOS_ID",
    "GROUPS",
    "PAD_ID",
    "SOS_ID",
    "TOKENIZATIONS",
    "UNK_ID",
    "Alignment",
    "Attention",
    "AttentionFactory",
    "AttentionOutput",
    "Decoder",
    "DecoderOutput",
    "Encoder",
    "EncoderOutput",
    "Example",
    "PluginContractError",
    "PluginError",
    "PluginInfo",
    "State",
    "Task",
    "create_plugin",
    "describe_plugins",
    "dot_scores",
    "join_tokens",
    "list_plugins",
    "load_plugin",
    "masked_softmax",
    "require_positive_int",
    "require_probability",
    "split_tokens",
    "weighted_sum",
]
