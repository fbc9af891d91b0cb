"""Whether a scheduled retrain has anything new to learn: a task that read its data from a file
(or a dictionary release) names that data by a digest, and a challenger trained on the
champion's own data would only repeat it."""

from __future__ import annotations


def unchanged_reason(current: str | None, champion_data: str | None, champion_version: str | None) -> str | None:
    """Why a retrain can end without training, or None when it should train.

    ``current``: the digest of the data the task reads now (None: a generated task, always fresh
    data); ``champion_data``: the digest recorded on the champion's run (None: not recorded);
    ``champion_version``: the champion's version (None: no champion yet)."""
    if current is None or champion_version is None or champion_data != current:
        return None
    return f"data unchanged: the champion (version {champion_version}) was trained on this data ({current[:12]})"
