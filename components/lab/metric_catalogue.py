"""The metric catalogue: every metric attnlab shows, declared once, and where it is shown.

Each :class:`Metric` of :data:`CATALOGUE` says what a run logs (``test_<name>``, or ``<name>``
for a run's own measures such as ``train_seconds``), which direction is better, how one run's
value is written (``fmt``) and a mean over seeds (``short_fmt``), its block (``group``), and the
places that show it with its heading there (``shown``). The outputs read it when they are built:

- ``summary``: the lines of ``attnlab train`` (:mod:`attnlab.lab.summaries`): the ``test:`` line,
  then one line per group (the erasure line has a layout of its own);
- ``sweep_line``: a sweep's line per finished run (:func:`attnlab.lab.summaries.finish_line`);
- ``sweep``: the sweep's comparison table, a block per group (:mod:`attnlab.evaluation.compare`);
- ``compare``: ``attnlab compare``'s metrics block (:mod:`attnlab.evaluation.run_compare`);
- ``runs``, ``runs_json``: the ``attnlab runs`` table's heading and its ``--json`` key
  (:mod:`attnlab.ops.run_listing`);
- ``mlflow_view``: a column of attnlab's saved runs view in the MLflow UI
  (``attnlab.flows.tracking.mlflow_ui``; ``view_width``: its width in pixels);
- ``significance``: the heading of a paired-test measure in a sweep's significance table
  (:mod:`attnlab.evaluation.arm_significance`; the measures tested are
  :data:`attnlab.evaluation.significance.MEASURES`, their direction is ``better`` here);
- ``explorer``: beside a model's name on the attention explorer page (:mod:`attnlab.viz.explorer_data`).

Adding a metric is one entry here, once the evaluation computes it (the outputs that list a
run's metrics read them from its ``metrics``). Readers look :data:`CATALOGUE` up on each call,
so a test may replace it.

Pure: no imports beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

#: Which direction of a metric is better (None: neither, e.g. a count or a diagnostic).
Better = Literal["higher", "lower"] | None
HIGHER: Better = "higher"
LOWER: Better = "lower"

#: The places that show metrics (see the module docstring).
SUMMARY, SWEEP_LINE, SWEEP, COMPARE = "summary", "sweep_line", "sweep", "compare"
RUNS, RUNS_JSON, MLFLOW_VIEW, SIGNIFICANCE, EXPLORER = "runs", "runs_json", "mlflow_view", "significance", "explorer"
PLACES = (SUMMARY, SWEEP_LINE, SWEEP, COMPARE, RUNS, RUNS_JSON, MLFLOW_VIEW, SIGNIFICANCE, EXPLORER)

#: The groups after the main one (``""``), in the order shown, with the sweep table's title of
#: each group's block; the summary's line of a group starts with the group's name.
GROUPS = {
    "greedy": "greedy decoding (the runs above used beam search)",
    "alignment": "alignment",
    "erasure": "erasure (teacher-forced)",
    "explained alignment": "explanations' alignment error rate (AER; lower: nearer the gold alignment)",
    "explained faithfulness": "explanations' comprehensiveness (probability lost when the top source is erased; higher: more faithful)",
}
#: The groups a train summary shows together as one table of explanations (a row per measure,
#: a column per explanation: :func:`attnlab.lab.summaries.explanation_lines`).
EXPLANATION_GROUPS = ("explained alignment", "explained faithfulness")

#: The explanations scored side by side (attention, then the gradient attributions of
#: :mod:`attnlab.evaluation.attribution`), and per group their measures with which direction is
#: better and the summary's words (:mod:`attnlab.evaluation.explanation_measures` computes them;
#: metric ``explain_<explanation>_<measure>``). The sweep's block of each group shows one measure
#: per explanation: the first of the group.
EXPLANATIONS = ("attention", "saliency", "input_x_gradient", "integrated_gradients")
EXPLANATION_MEASURES: dict[str, tuple[tuple[str, Better, str], ...]] = {
    "explained alignment": (
        ("error_rate", "lower", "error rate (AER)"),
        ("within_one", "higher", "within one"),
        ("shifted_accuracy", "higher", "shifted by the mode"),
    ),
    "explained faithfulness": (
        ("comprehensiveness", "higher", "comprehensiveness"),
        ("sufficiency", "lower", "sufficiency"),
        ("flip_top1", "higher", "flip rate (top 1 erased)"),
        ("tau_attention", None, "Kendall's tau with attention"),
    ),
}


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` (what a run logs, less the ``test_`` prefix of a test metric), which
    direction is better, how it is written, its group and where it is shown (place -> heading)."""

    name: str
    better: Better
    shown: Mapping[str, str] = field(default_factory=dict)
    fmt: str = ".4f"
    short_fmt: str = ",.3f"
    group: str = ""
    test: bool = True
    view_width: int | None = None

    @property
    def key(self) -> str:
        """The run's metric key: ``test_<name>``, or ``<name>`` for a run's own measure."""
        return f"test_{self.name}" if self.test else self.name

    def text(self, value: float) -> str:
        """One run's value as the outputs write it, e.g. ``0.9500``."""
        return format(value, self.fmt)

    def short_text(self, value: float) -> str:
        """A value in a narrow table (a sweep's means and spreads, its lines), e.g. ``0.950``."""
        return format(value, self.short_fmt)


def at(*places: str, **headings: str) -> dict[str, str]:
    """Where a metric is shown: each of ``places`` headed by the metric's name (filled in by
    :func:`metric_entry`), each of ``headings`` (place=heading) by its own heading."""
    unknown = sorted((set(places) | set(headings)) - set(PLACES))
    if unknown:
        raise ValueError(f"unknown place(s) {', '.join(unknown)}; the places are {', '.join(PLACES)}")
    return {**dict.fromkeys(places, ""), **headings}


def metric_entry(
    name: str,
    better: Better,
    shown: Mapping[str, str],
    group: str = "",
    *,
    fmt: str = ".4f",
    short_fmt: str = ",.3f",
    test: bool = True,
    view_width: int | None = None,
) -> Metric:
    """A :class:`Metric` whose places without a heading of their own are headed by its name."""
    if group and group not in GROUPS:
        raise ValueError(f"metric {name}: unknown group {group!r}; the groups are {', '.join(GROUPS)} (or none)")
    headed = {place: heading or name for place, heading in shown.items()}
    return Metric(name, better, headed, fmt, short_fmt, group, test, view_width)


#: The format of a count (parameters, examples), for one run and in a narrow table.
COUNT = ",.0f"

#: Every metric attnlab shows, in the order the outputs list them.
CATALOGUE: tuple[Metric, ...] = (
    metric_entry("exact_match", HIGHER, at(SUMMARY, SWEEP_LINE, COMPARE, RUNS, RUNS_JSON, MLFLOW_VIEW, EXPLORER, sweep="em", significance="em"), view_width=140),
    metric_entry("char_accuracy", HIGHER, at(SUMMARY, SWEEP_LINE, SWEEP, COMPARE, EXPLORER)),
    metric_entry("token_error_rate", LOWER, at(SUMMARY, SWEEP, COMPARE, RUNS_JSON, runs="token_err", significance="per")),
    metric_entry("sequence_error_rate", LOWER, at(SUMMARY, SWEEP, COMPARE, RUNS_JSON, runs="seq_err", significance="wer")),
    metric_entry("alignment_accuracy", HIGHER, at(SUMMARY, SWEEP, COMPARE, MLFLOW_VIEW, EXPLORER, sweep_line="alignment", runs="alignment", runs_json="alignment"), view_width=170),
    metric_entry("attention_entropy", None, at(SUMMARY, COMPARE)),
    metric_entry("pad_attention_mass", LOWER, at(COMPARE)),
    metric_entry("epochs_trained", None, at(COMPARE), test=False, fmt=COUNT, short_fmt=COUNT),
    metric_entry("train_seconds", LOWER, at(SWEEP, COMPARE), test=False, fmt=".1f", short_fmt=",.1f"),
    metric_entry("parameters", None, at(SWEEP, COMPARE), test=False, fmt=COUNT, short_fmt=COUNT),
    metric_entry("greedy_exact_match", HIGHER, at(COMPARE, sweep="em"), "greedy"),
    metric_entry("greedy_char_accuracy", HIGHER, at(COMPARE), "greedy"),
    metric_entry("greedy_token_error_rate", LOWER, at(COMPARE, sweep="token_error_rate"), "greedy"),
    metric_entry("greedy_sequence_error_rate", LOWER, at(COMPARE, sweep="sequence_error_rate"), "greedy"),
    metric_entry("alignment_within_one", HIGHER, at(COMPARE, EXPLORER, summary="within one", sweep="within_one"), "alignment"),
    metric_entry("alignment_offset_mode", None, at(COMPARE, summary="offset mode", sweep="offset_mode"), "alignment", fmt="+.0f", short_fmt=",.1f"),
    metric_entry("alignment_shifted_accuracy", HIGHER, at(COMPARE, summary="shifted by the mode", sweep="shifted_accuracy"), "alignment"),
    metric_entry("alignment_error_rate", LOWER, at(COMPARE, summary="error rate (AER)", sweep="error_rate"), "alignment"),
    *(
        metric_entry(f"erasure_{kind}_{probe}", None, at(COMPARE, summary=probe, sweep=f"{kind}_{probe}"), "erasure")
        for kind in ("flip", "drop")
        for probe in ("top", "random", "gold")
    ),
    metric_entry("erasure_examples", None, at(COMPARE), "erasure", fmt=COUNT, short_fmt=COUNT),
    *(
        metric_entry(f"explain_{explanation}_{measure}", better, at(COMPARE, summary=words, **({"sweep": explanation} if index == 0 else {})), group)
        for group, measures in EXPLANATION_MEASURES.items()
        for index, (measure, better, words) in enumerate(measures)
        for explanation in EXPLANATIONS
        if not (explanation == "attention" and measure == "tau_attention")
    ),
    metric_entry("explain_examples", None, at(COMPARE), "explained faithfulness", fmt=COUNT, short_fmt=COUNT),
)  # fmt: skip


def shown_in(place: str, group: str | None = None) -> tuple[Metric, ...]:
    """The metrics ``place`` shows, in catalogue order; only those of ``group`` when given."""
    return tuple(m for m in CATALOGUE if place in m.shown and (group is None or m.group == group))


def find(name: str) -> Metric | None:
    """The catalogue's metric of ``name`` (or of its run key ``test_<name>``), or None."""
    return next((m for m in CATALOGUE if name in (m.name, m.key)), None)


def metric(name: str) -> Metric:
    """The catalogue's metric of ``name``; KeyError naming it and the metrics declared."""
    found = find(name)
    if found is None:
        raise KeyError(f"metric {name!r} is not in the catalogue; declared: {', '.join(m.name for m in CATALOGUE)}")
    return found
