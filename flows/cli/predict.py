"""``attnlab predict``: load a model (the task's champion, a registered version, a run's model or a
bundle folder), predict one line per input and optionally draw the heatmaps and write the
attention explorer page."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from attnlab.flows.cli.support import quiet, user_errors
from attnlab.flows.tracking.errors import UserError
from attnlab.lab.output_paths import check_output_file
from attnlab.model.uri import bundle_folder, check_model_option


def register(app: typer.Typer) -> None:
    """Add ``predict`` to the ``attnlab`` app."""
    app.command()(predict)


def open_store(model: str | None, task: str) -> str:
    """Point MLflow at the tracking store and return the model URI to load; UserError when the
    task has no registered model or champion yet."""
    from attnlab.flows.tracking import registry as model_registry
    from attnlab.flows.tracking import store_guard
    from attnlab.flows.tracking.store import check_store, resolve_store, use_store
    from attnlab.lab.names import model_name

    store = resolve_store()
    if model is None:
        name = model_name(task)
        if store.embedded and not (store.folder / "mlflow.db").exists():
            store_guard.check_not_lost(store.folder)  # the database is lost, not yet to be made
            raise UserError(
                f"no registered model {name!r} yet (no MLflow store at {store.folder}); train one first: attnlab train --task {task}"
            )
        check_store(store, writable=False)  # predicting only reads: a read-only store serves
        use_store(store)
        from mlflow import MlflowClient

        if model_registry.champion_version(MlflowClient(), name) is None:
            raise UserError(
                f"no registered model {name!r} with a {model_registry.CHAMPION!r} yet in {store.tracking_uri}; "
                f"train one first: attnlab train --task {task}"
            )
    else:
        check_store(store, writable=False)
        use_store(store)
    return model_registry.resolve_model_uri(model, task)


def model_config(model: str | None, uri: str | None) -> dict | None:
    """The config (as saved, a plain dict) of the model to load, read without loading it or
    importing torch: a bundle folder's ``config.json`` (checked with the folder's other files:
    :class:`~attnlab.model.bundle.DamagedBundle` names a missing or damaged one), else that file alone
    downloaded from the MLflow model at ``uri``; None when it cannot be had that way (loading
    the model then says why)."""
    folder = bundle_folder(model)
    if folder is not None:
        from attnlab.model.bundle import read_bundle

        return read_bundle(folder)[0].model_dump(mode="json")
    import tempfile

    import mlflow.artifacts

    # The pyfunc model keeps its bundle under artifacts/<pyfunc.BUNDLE>/.
    wanted = f"{uri.rstrip('/')}/artifacts/bundle/config.json"
    with tempfile.TemporaryDirectory() as scratch:
        try:
            path = mlflow.artifacts.download_artifacts(artifact_uri=wanted, dst_path=scratch)
            config = json.loads(Path(path).read_text())
        except Exception:  # noqa: BLE001  only a head start: loading the model reports why
            return None
    return config if isinstance(config, dict) else None


def check_inputs(texts: list[str], config: dict | None) -> None:
    """UserError naming the first of ``texts`` that the task of ``config`` refuses (see
    :meth:`attnlab.plugins.Task.check_source`), before any model is loaded."""
    if config is None:
        return
    from attnlab.data.sources import config_tasks, first_problem

    problem = first_problem(texts, *config_tasks(config))
    if problem is not None:
        raise UserError(problem)


def load_model(model: str | None, uri: str | None):
    """(uri, :class:`~attnlab.model.predictor.Predictor`) for --model: a bundle folder or the
    MLflow model at ``uri``."""
    folder = bundle_folder(model)
    if folder is not None:
        from attnlab.model.bundle import load_bundle
        from attnlab.model.predictor import Predictor

        return str(model), Predictor.of(*load_bundle(folder))
    from attnlab.flows.tracking import registry as model_registry

    return uri, model_registry.load_predictor(uri)


def check_outputs(plot: Path | None, html: Path | None, count: int) -> None:
    """Refuse at once (before any model loads) a --plot or --html path that cannot be written,
    with every heatmap file the inputs would give (:mod:`attnlab.lab.output_paths`)."""
    if plot is not None:
        for path in _plot_paths(plot, count):
            check_output_file("--plot", path, "heatmap.png")
            check_output_file("--plot", _heads_path(path), "heatmap.png")
    check_output_file("--html", html, "explorer.html")


def check_task(task: str) -> None:
    """Refuse a --task that no installed plugin provides, as ``attnlab train`` does."""
    from attnlab.lab.sweep_options import unknown_plugin

    problem = unknown_plugin("task", task)
    if problem:
        raise UserError(f"--task: {problem}")


def write_page(html: Path, seq2seq, texts: list[str], uri: str, config) -> str:
    """The explorer page (:mod:`attnlab.viz.explorer`) of the model's attention on ``texts`` written
    to ``html``; its path. Targets and gold alignments are unknown (null)."""
    from attnlab.viz.explorer import write_explorer
    from attnlab.viz.explorer_data import describe, inputs_document

    try:
        return str(write_explorer(inputs_document(seq2seq, texts, uri, describe(config)), html))
    except OSError as exc:
        raise UserError(f"--html {str(html)!r} cannot be written: {exc.strerror or exc}") from None


def _plot_paths(plot: Path, count: int) -> list[Path]:
    if count == 1:
        return [plot]
    return [plot.with_name(f"{plot.stem}-{i + 1}{plot.suffix or '.png'}") for i in range(count)]


def _heads_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}-heads{path.suffix or '.png'}")


def save_heatmaps(plot: Path, results, uri: str) -> list[str]:
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


def input_options(
    texts: list[str], file: str | None, skip_bad: bool, beam_size: str | None, plot: Path | None, html: Path | None
) -> tuple[str | None, int]:
    """(the file to read, None for the arguments; the beam size) from predict's options; UserError
    for a mistake among them: both arguments and --file or neither, --skip-bad without a file,
    a bad --beam-size, --plot/--html with a file or with beam search (they draw greedy
    decoding's attention)."""
    from attnlab.lab.predict_inputs import choose_input, parse_beam_size

    try:
        source = choose_input(texts, file)
        beam = 1 if beam_size is None else parse_beam_size(beam_size)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    drawn = "--plot" if plot is not None else "--html" if html is not None else None
    if skip_bad and source is None:
        raise UserError(
            "--skip-bad skips bad lines of --file or '-' input; source arguments are all checked, so leave it out or use --file"
        )
    if drawn and source is not None:
        raise UserError(f"{drawn} draws the inputs given as arguments, not --file or '-' input; give the sources to draw as arguments")
    if drawn and beam > 1:
        raise UserError(
            f"{drawn} draws greedy decoding's attention and --beam-size {beam} decodes by beam search, which keeps none; leave out --beam-size (or give 1) to draw"
        )
    return source, beam


def predict_file(source: str, model: str | None, task: str, beam: int, json_output: bool, skip_bad: bool) -> None:
    """Predict the source lines of --file ``source`` (stdin for '-') in batches, printing each
    batch as it is decoded (see :mod:`attnlab.flows.cli.predict_lines`)."""
    from attnlab.flows.cli.predict_lines import open_input, predict_lines

    stream = open_input(source)
    try:
        _, predictor = load_model(model, None if bundle_folder(model) else open_store(model, task))

        def decode(texts: list[str]) -> list[str]:
            return [r.output for r in predictor.predict(texts, beam)]

        predict_lines(stream, predictor.issue, decode, json_output, skip_bad, "stdin" if source == "-" else repr(source))
    finally:
        stream.close()


def predict(
    texts: list[str] | None = typer.Argument(
        None,
        metavar="[TEXT]...",
        help="source strings, e.g. 25-12-2023; a lone '-' reads them from stdin as --file - does",
        show_default=False,
    ),
    model: str | None = typer.Option(
        None, metavar="URI", help="MLflow model URI (models:/NAME@ALIAS, models:/NAME/VERSION, runs:/ID/model) or a bundle folder"
    ),
    task: str = typer.Option("date", metavar="NAME", help="task whose champion to use when --model is not given"),
    plot: Path | None = typer.Option(
        None, metavar="FILE.png", help="save the attention heatmap here (PNG; FILE-N.png for several inputs; missing folders are created)"
    ),
    html: Path | None = typer.Option(
        None,
        metavar="FILE.html",
        help="write the interactive attention explorer for the inputs here (one self-contained page; missing folders are created)",
    ),
    file: str | None = typer.Option(
        None,
        "--file",
        metavar="PATH",
        help="read the sources from PATH, one a line ('-': stdin); blank lines are skipped; decoded 256 lines at a time, each batch printed as it is done",
    ),
    skip_bad: bool = typer.Option(
        False,
        "--skip-bad",
        help="with --file: skip refused lines (each named on stderr with its line number, then a count) instead of refusing the whole input",
    ),
    beam_size: str | None = typer.Option(
        None, "--beam-size", metavar="N", help="decode by beam search with N beams (1..100; default 1 = greedy)"
    ),
    json_output: bool = typer.Option(False, "--json", help="print one JSON object (with --file: one a line)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show MLflow's logs"),
) -> None:
    """Predict with a trained model: one line per input (default: the task's champion).

    The sources are the arguments, or the lines of --file PATH ('-': stdin). A refused source
    refuses the whole input before anything is printed; with --file, --skip-bad goes on instead.
    """
    quiet(verbose)
    with user_errors():
        texts = texts or []
        source, beam = input_options(texts, file, skip_bad, beam_size, plot, html)
        check_model_option(model)
        check_task(task)
        if source is not None:
            predict_file(source, model, task, beam, json_output, skip_bad)
            return
        check_outputs(plot, html, len(texts))
        config = None
        if model is None:  # the champion: its config read without MLflow, where the store allows
            from attnlab.flows.tracking.champion_config import champion_config
            from attnlab.flows.tracking.store import resolve_store
            from attnlab.lab.names import model_name

            where = resolve_store()
            config = champion_config(where.folder, model_name(task)) if where.embedded else None
            check_inputs(texts, config)
        uri = None if bundle_folder(model) else open_store(model, task)
        if config is None:  # not read yet: from the bundle folder or the MLflow model
            check_inputs(texts, model_config(model, uri))  # before torch and the model load
        uri, predictor = load_model(model, uri)
        try:
            results = predictor.predict(texts, beam)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        saved = save_heatmaps(plot, results, uri) if plot is not None else []
        page = write_page(html, predictor.model, texts, uri, predictor.config) if html is not None else None
    if json_output:
        payload = {"model": uri, "predictions": [{"source": r.source, "prediction": r.output} for r in results], "plots": saved}
        if page is not None:
            payload["html"] = page
        typer.echo(json.dumps(payload, ensure_ascii=False))
        return
    for result in results:
        typer.echo(f"{result.source} -> {result.output}")
    for path in [*saved, *([page] if page else [])]:
        typer.echo(f"saved {path}", err=True)
