"""The plugin conformance kit under its first name: an alias of :mod:`attnlab.plugins.testing`."""

from attnlab.plugins.testing import *  # noqa: F403
from attnlab.plugins.testing import __all__  # noqa: F401
