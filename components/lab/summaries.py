"""The summaries of a train run and of a sweep as people read them, from the JSON-ready dicts the
flows return (``attnlab train --json``, ``attnlab sweep --json``): the lines printed at the end,
the line of each finished sweep run, and the error line of a champion that cannot be loaded. The
metrics shown, their order, headings and formats come from :mod:`attnlab.lab.metric_catalogue`.

Pure: plain dicts in, text out.
"""

from __future__ import annotations

from typing import Any

from attnlab.lab.config import BEST_RULE
from attnlab.lab.metric_catalogue import EXPLANATION_GROUPS, EXPLANATIONS, GROUPS, SUMMARY, SWEEP_LINE, Metric, shown_in

#: The erasure line's two measures: their words and the prefix of their metrics' names.
ERASURE_MEASURES = (("flip rate", "erasure_flip_"), ("probability drop", "erasure_drop_"))


def _cells(shown: tuple[Metric, ...], metrics: dict[str, float], place: str = SUMMARY) -> list[str]:
    """``heading value`` of each of ``shown`` that ``metrics`` has, as the catalogue writes it."""
    return [f"{m.shown[place]} {m.text(metrics[m.key])}" for m in shown if m.key in metrics]


def erasure_line(metrics: dict[str, float]) -> str | None:
    """The summary's line on the erasure tests, e.g. ``erasure (500 test examples): flip rate top
    0.2567  random 0.0000  gold 0.2480;  probability drop top ...``; None without them."""
    shown = shown_in(SUMMARY, "erasure")
    parts = []
    for words, prefix in ERASURE_MEASURES:
        cells = _cells(tuple(m for m in shown if m.name.startswith(prefix)), metrics)
        if cells:
            parts.append(f"{words} " + "  ".join(cells))
    if not parts:
        return None
    examples = metrics.get("test_erasure_examples")
    sample = f" ({examples:.0f} test examples)" if examples is not None else ""
    return f"erasure{sample}: " + ";  ".join(parts)


def explanation_lines(metrics: dict[str, float]) -> list[str]:
    """The summary's table of explanations: a column per explanation (attention first), a row per
    measure of the catalogue's explanation groups, "-" where a measure has no value (attention's
    own tau, a scorer that does not attend); [] when the run scored none, e.g.::

        explanations (50 test examples)  attention  saliency  input_x_gradient  integrated_gradients
          error rate (AER)                  0.3800    0.4300            0.4150                0.2820
    """
    examples = metrics.get("test_explain_examples")
    if examples is None:
        return []
    rows: dict[str, dict[str, str]] = {}
    for group in EXPLANATION_GROUPS:
        for m in shown_in(SUMMARY, group):
            explanation = next((e for e in EXPLANATIONS if m.name.startswith(f"explain_{e}_")), None)
            if explanation is not None:
                rows.setdefault(m.shown[SUMMARY], {})[explanation] = m.text(metrics[m.key]) if m.key in metrics else "-"
    head = f"explanations ({examples:.0f} test examples)"
    width = max(len(head), *(len(words) + 2 for words in rows))
    lines = [head.ljust(width) + "".join(f"  {e}" for e in EXPLANATIONS)]
    for words, cells in rows.items():
        if set(cells.values()) == {"-"}:
            continue  # a task without gold alignments has no alignment measures
        lines.append(f"  {words}".ljust(width) + "".join(f"  {cells.get(e, '-'):>{len(e)}}" for e in EXPLANATIONS))
    return lines


def attention_lines(metrics: dict[str, float]) -> list[str]:
    """The summary's line of each group of the catalogue after the ``test:`` line (the alignment
    measures, the erasure tests, ...: ``test_*`` metrics), each only when its metrics are there (a
    scorer that does not attend has none); the explanation groups as one table
    (:func:`explanation_lines`)."""
    lines = []
    for group in GROUPS:
        if group in EXPLANATION_GROUPS:
            if group == EXPLANATION_GROUPS[0]:
                lines.extend(explanation_lines(metrics))
            continue
        if group == "erasure":
            line = erasure_line(metrics)
        else:
            cells = _cells(shown_in(SUMMARY, group), metrics)
            line = f"{group}: " + "  ".join(cells) if cells else None
        if line:
            lines.append(line)
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
    shown = "  ".join(_cells(shown_in(SUMMARY, ""), metrics))
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
    scores = "  ".join(f"{m.shown[SWEEP_LINE]} {m.short_text(metrics[m.key])}" for m in shown_in(SWEEP_LINE) if m.key in metrics)
    return f"{head} {scores}  ({summary['epochs']} epoch{'s' * (summary['epochs'] != 1)}, {summary['train_seconds']:.1f} s training)"


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
