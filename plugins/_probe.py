"""Conformance probes: run a plugin once on a tiny batch and check what it hands back.

The one place where the plugin contracts are checked at run time. ``build_model`` probes the
plugins of every model it builds, ``attnlab plugins --check`` probes every installed plugin, and
``attnlab.plugins.testing`` gives plugin authors the same checks for their own tests. A violation raises
:class:`PluginContractError`, a :class:`PluginError` (the CLI prints it as one line) that is also
an ``AssertionError`` (pytest shows it as a failed check), naming the plugin and its distribution,
what was expected and what came back::

    scorer 'transposed' (my_scorers:Transposed, from my-scorers 1.0): score(query [3, 2, 8],
    keys [3, 5, 8]): expected a tensor of shape [B, Lq, Lk] = [3, 2, 5], got [3, 5, 2] (transposed?)

Probes run the plugin in eval mode on a few examples (milliseconds) and touch neither its
weights nor the global random state, without gradients.
"""

from __future__ import annotations

from attnlab.plugins._probe_base import PluginContractError, Subject, evaluating, first_of_each, source_mask
from attnlab.plugins._probe_modules import probe_decoder, probe_encoder, probe_scorer
from attnlab.plugins._probe_task import probe_task
from attnlab.plugins.registry import required_options

__all__ = [
    "PluginContractError",
    "Subject",
    "evaluating",
    "first_of_each",
    "probe_decoder",
    "probe_encoder",
    "probe_scorer",
    "probe_task",
    "required_options",
    "source_mask",
]
