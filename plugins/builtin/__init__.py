"""The built-in plugins, registered through entry points in ``pyproject.toml`` exactly as a
third party's would be: scorers, encoders, decoders and tasks.

May import: :mod:`attnlab.plugins` (the contracts), torch, and pandas (the pairs task reads files).
"""
