"""The summaries of a train run and of a sweep as people read them, from the JSON-ready dicts the
flows return (``attnlab train --json``, ``attnlab sweep --json``): the lines printed at the end,
the line of each finished sweep run, and the error line of a champion that cannot be loaded.

Pure: plain dicts in, text out.
"""

from __future__ import annotations

from typing import Any

from attnlab.lab.config import BEST_RULE

#: The test metrics on the summary's ``test:`` line, in this order, each when present.
SHOWN_METRICS = ("exact_match", "char_accuracy", "token_error_rate", "sequence_error_rate", "alignment_accuracy", "attention_entropy")


def attention_lines(metrics: dict[str, float]) -> list[str]:
    """The summary's lines on the alignment measures and the erasure tests (``test_*`` metrics),
    each only when its metrics are there (a scorer that does not attend has neither)."""
    lines = []
    if "test_alignment_offset_mode" in metrics:
        lines.append(
            f"alignment: within one {metrics['test_alignment_within_one']:.4f}  "
            f"offset mode {metrics['test_alignment_offset_mode']:+.0f}  "
            f"shifted by the mode {metrics['test_alignment_shifted_accuracy']:.4f}  "
            f"error rate (AER) {metrics['test_alignment_error_rate']:.4f}"
        )
    probes = [p for p in ("top", "random", "gold") if f"test_erasure_flip_{p}" in metrics]
    if probes:
        flips = "  ".join(f"{p} {metrics[f'test_erasure_flip_{p}']:.4f}" for p in probes)
        drops = "  ".join(f"{p} {metrics[f'test_erasure_drop_{p}']:.4f}" for p in probes)
        examples = metrics.get("test_erasure_examples")
        sample = f" ({examples:.0f} test examples)" if examples is not None else ""
        lines.append(f"erasure{sample}: flip rate {flips};  probability drop {drops}")
    return lines


def kept_weights(selection: dict[str, Any]) -> str:
    """Which weights a run kept, in words, from its summary's ``selection`` (``checkpoint``,
    ``average_last``, ``epochs`` trained, and the training's ``selected_*`` and ``averaged_epochs``):
    e.g. 'epoch 3 of 5, the best (highest validation exact match, ties broken by lower validation
    loss): validation exact match 0.9500, loss 0.1234'."""
    epoch, averaged, epochs = int(selection["selected_epoch"]), int(selection["averaged_epochs"]), int(selection["epochs"])
    if averaged > 1:
        which = f"the mean of epochs {epoch - averaged + 1}-{epoch} of {epochs}"
    elif selection["checkpoint"] == "best":
        which = f"epoch {epoch} of {epochs}, the best ({BEST_RULE})"
    else:
        which = f"epoch {epoch} of {epochs}, the last"
    return f"{which}: validation exact match {selection['selected_val_exact_match']:.4f}, loss {selection['selected_val_loss']:.4f}"


def promotion_verdict(model: dict[str, Any]) -> str:
    """What became of a train run's registered model (the summary's ``model`` entry)."""
    decision = model.get("decision")
    if decision is None:
        return "registered, not promoted"
    if decision.get("champion_unusable"):
        return f"not promoted: version {model['champion_version']} holds the alias but cannot be loaded (see the error line)"
    if model["champion"]:
        return f"new champion: {decision['reason']}"
    holder = f"version {model['champion_version']} keeps the alias" if model["champion_version"] else "no champion"
    return f"not champion ({holder}): {decision['reason']}"


def format_summary(summary: dict[str, Any]) -> str:
    """The human summary of a train run (the JSON summary's main fields; ``ui``: how to open the
    MLflow UI)."""
    metrics = summary["metrics"]
    shown = "  ".join(f"{name} {metrics['test_' + name]:.4f}" for name in SHOWN_METRICS if "test_" + name in metrics)
    model = summary["model"]
    benchmark = model.get("benchmark")
    where = f" on the benchmark ({benchmark['size']} examples, run {benchmark['run_id']})" if benchmark else ""
    early = ", stopped early" if summary["stopped_early"] else ""
    selection = summary.get("selection") or {}
    chosen = selection and (selection["checkpoint"] != "last" or selection["average_last"] > 1)
    return "\n".join(
        [
            f"run {summary['run_id']} FINISHED in experiment {summary['experiment']}: "
            f"{summary['epochs']} epoch(s), {summary['train_seconds']:.1f} s training{early}",
            *([f"weights: {kept_weights(selection)}"] if chosen else []),
            f"test:  {shown}",
            *attention_lines(metrics),
            f"model: {model['name']} version {model['version']} ({model['uri']})",
            f"promotion{where}: {promotion_verdict(model)}",
            f"open the MLflow UI: {summary['ui']}",
        ]
    )


def unusable_champion(summary: dict[str, Any]) -> str | None:
    """The error line of a train run whose promotion found the champion unusable, or None."""
    model = summary["model"]
    why = (model.get("decision") or {}).get("champion_unusable")
    if not why:
        return None
    return (
        f"the champion of {model['name']} (version {model['champion_version']}) cannot be loaded: {why}; "
        f"version {model['version']} was registered but not promoted; repair the champion, or in the MLflow UI "
        f"(Models > {model['name']}) move the alias 'champion' to a usable version or delete it"
    )


def finish_line(index: int, total: int, result: dict[str, Any]) -> str:
    """The line of the ``index``-th of ``total`` sweep runs to end: its scores, or why it failed
    (``result``: the sweep's outcome of one run, ``{label, seed, status, summary | error}``)."""
    head = f"[{index}/{total}] {result['label']} seed {result['seed']}:"
    if result["status"] != "FINISHED":
        return f"{head} FAILED: {result['error']}"
    summary = result["summary"]
    metrics = summary["metrics"]
    alignment = metrics.get("test_alignment_accuracy")
    extra = f"  alignment {alignment:.3f}" if alignment is not None else ""
    return (
        f"{head} exact_match {metrics['test_exact_match']:.3f}  char_accuracy {metrics['test_char_accuracy']:.3f}{extra}"
        f"  ({summary['epochs']} epoch{'s' * (summary['epochs'] != 1)}, {summary['train_seconds']:.1f} s training)"
    )


def promotion_lines(summary: dict[str, Any]) -> list[str]:
    """One line per registered run of a ``--register`` sweep: its version and the decision."""
    lines = []
    for run in summary.get("promotions", []):
        verdict = "champion" if run["promoted"] else "not promoted"
        lines.append(f"{run['label']} seed {run['seed']}: {run['model']} version {run['version']} {verdict}: {run['reason']}")
    return lines


def format_sweep(summary: dict[str, Any]) -> str:
    """The comparison table of a sweep and where its results are."""
    failed = f", {summary['failed']} failed" if summary["failed"] else ""
    failed += f", {summary['reused']} reused from earlier sweeps" if summary.get("reused") else ""
    return "\n".join(
        [
            summary["text"],
            "",
            f"sweep run {summary['parent_run_id']} in experiment {summary['experiment']}: "
            f"{summary['run_count']} runs of {summary['combinations']} combinations{failed}",
            f"plots (artifacts of the sweep run): {', '.join(summary['plots'])}",
            *([f"copied to: {', '.join(summary['saved_plots'])}"] if summary.get("saved_plots") else []),
            *promotion_lines(summary),
        ]
    )
