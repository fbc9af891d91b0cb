"""What ``attnlab predict`` draws and writes besides its lines: the attention heatmaps of
``--plot`` and the explorer page of ``--html``, each path checked before any model loads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.flows.tracking.errors import UserError
from attnlab.lab.output_paths import check_output_file

if TYPE_CHECKING:  # torch comes with them
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import Seq2Seq
    from attnlab.model.predict import Prediction


def check_outputs(plot: Path | None, html: Path | None, count: int) -> None:
    """Refuse at once (before any model loads) a --plot or --html path that cannot be written,
    with every heatmap file the inputs would give (:mod:`attnlab.lab.output_paths`)."""
    if plot is not None:
        for path in _plot_paths(plot, count):
            check_output_file("--plot", path, "heatmap.png")
            check_output_file("--plot", _heads_path(path), "heatmap.png")
    check_output_file("--html", html, "explorer.html")


def write_page(html: Path, seq2seq: Seq2Seq, texts: list[str], uri: str, config: ExperimentConfig) -> str:
    """The explorer page (:mod:`attnlab.viz.explorer`) of the model's attention on ``texts`` written
    to ``html``; its path. Targets and gold alignments are unknown (null). Its first inputs are
    explained by gradient attributions too (:func:`attnlab.viz.explorer_views.explained_on_page`)."""
    from attnlab.viz.explorer import write_explorer
    from attnlab.viz.explorer_data import describe, inputs_document
    from attnlab.viz.explorer_views import explained_on_page

    document = inputs_document(seq2seq, texts, uri, describe(config), explained_on_page(config), config.explain_steps)
    try:
        return str(write_explorer(document, html))
    except OSError as exc:
        raise UserError(f"--html {str(html)!r} cannot be written: {exc.strerror or exc}") from None


def _plot_paths(plot: Path, count: int) -> list[Path]:
    if count == 1:
        return [plot]
    return [plot.with_name(f"{plot.stem}-{i + 1}{plot.suffix or '.png'}") for i in range(count)]


def _heads_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}-heads{path.suffix or '.png'}")


def save_heatmaps(plot: Path, results: list[Prediction], uri: str) -> list[str]:
    """The attention heatmap of each result (and its per-head figure, for several heads) saved
    under ``plot`` (FILE-N.png for several); their paths."""
    if any(r.weights is None for r in results):
        raise UserError(f"model {uri} does not attend (scorer 'none'); there is no heatmap to plot")
    from attnlab.viz.heatmaps import attention_heatmap, head_heatmaps, save_figure

    saved = []
    for result, path in zip(results, _plot_paths(plot, len(results))):
        title = f"{result.source} -> {result.output}"
        figures = [(attention_heatmap(result.weights, result.source_tokens, result.output_tokens, title), path)]
        if result.head_weights is not None:
            figures.append((head_heatmaps(result.head_weights, result.source_tokens, result.output_tokens, title), _heads_path(path)))
        for figure, where in figures:
            try:
                saved.append(str(save_figure(figure, where)))
            except OSError as exc:
                raise UserError(f"--plot {str(where)!r} cannot be written: {exc.strerror or exc}") from None
    return saved
