"""``attnlab predict``: load a model (the task's champion, a registered version, a run's model or a
bundle folder), predict one line per input and optionally draw the heatmaps and write the
attention explorer page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from attnlab.flows.cli.options import (
    Beams,
    ChampionName,
    ChampionTask,
    ExplorerFile,
    HeatmapFile,
    JsonOutput,
    ModelUri,
    SkipBad,
    Sources,
    SourcesFile,
    Verbose,
)
from attnlab.flows.cli.predict_outputs import check_outputs, save_heatmaps, write_page
from attnlab.flows.cli.support import quiet, use_free_cores, user_errors
from attnlab.flows.tracking.errors import UserError
from attnlab.model.uri import bundle_folder, check_model_option

if TYPE_CHECKING:  # torch comes with them
    from attnlab.model.predict import Prediction
    from attnlab.model.predictor import Predictor
    from mlflow import MlflowClient

#: A model's saved config and task (``config.json``, ``task.json``; None without one) as plain dicts.
ModelFiles = tuple[dict[str, Any], dict[str, Any] | None]


def register(app: typer.Typer) -> None:
    """Add ``predict`` to the ``attnlab`` app."""
    app.command()(predict)


def open_store(model: str | None, name: str, task: str) -> str:
    """Point MLflow at the tracking store and return the model URI to load (``model``, else the
    champion of registered model ``name``); UserError when that model has no champion yet."""
    from attnlab.flows.tracking import registry as model_registry
    from attnlab.flows.tracking import store_guard
    from attnlab.flows.tracking.store import check_store, resolve_store, use_store

    store = resolve_store()
    if model is None:
        if store.folder is not None and not (store.folder / "mlflow.db").exists():
            store_guard.check_not_lost(store.folder)  # the database is lost, not yet to be made
            raise UserError(
                f"no registered model {name!r} yet (no MLflow store at {store.folder}); train one first: attnlab train --task {task}"
            )
        check_store(store, writable=False)  # predicting only reads: a read-only store serves
        use_store(store)
        from mlflow import MlflowClient

        client = MlflowClient()
        if model_registry.champion_version(client, name) is None:
            raise UserError(f"no registered model {name!r} with a {model_registry.CHAMPION!r} yet in {store.tracking_uri}; "
                            + others_hint(client, name, task))  # fmt: skip
    else:
        check_store(store, writable=False)
        use_store(store)
    return model_registry.resolve_model_uri(model, name)


def others_hint(client: MlflowClient, name: str, task: str) -> str:
    """What to do when ``name`` has no champion: choose another registered model of the task
    (listed), or train one."""
    from attnlab.lab.names import model_name

    prefix = model_name(task)
    others = sorted(m.name for m in client.search_registered_models() if m.name.startswith(prefix) and m.name != name)
    if others:
        return f"registered models of task {task!r}: {', '.join(others)}; choose one with --model-name"
    return f"train one first: attnlab train --task {task}"


def model_files(model: str | None, uri: str | None) -> ModelFiles | None:
    """The config and saved task (``config.json`` and ``task.json`` as plain dicts; None for a
    model saved without a task file) of the model to load, read without loading it or importing
    torch: from a bundle folder (checked with the folder's other files:
    :class:`~attnlab.model.bundle.DamagedBundle` names a missing or damaged one), else downloaded
    from the MLflow model at ``uri``; None when they cannot be had that way (loading the model
    then says why)."""
    folder = bundle_folder(model)
    if folder is not None:
        from attnlab.model.bundle import read_bundle

        task_file = folder / "task.json"
        task = json.loads(task_file.read_text()) if task_file.is_file() else None
        return read_bundle(folder)[0].model_dump(mode="json"), task if isinstance(task, dict) else None
    if uri is None:
        return None
    import tempfile

    import mlflow.artifacts

    # The pyfunc model keeps its bundle under artifacts/<pyfunc.BUNDLE>/.
    found: list[dict[str, Any] | None] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("config.json", "task.json"):
            try:
                path = mlflow.artifacts.download_artifacts(artifact_uri=f"{uri.rstrip('/')}/artifacts/bundle/{name}", dst_path=scratch)
                data = json.loads(Path(path).read_text())
            except Exception:  # noqa: BLE001  only a head start: loading the model reports why
                data = None
            found.append(data if isinstance(data, dict) else None)
    return None if found[0] is None else (found[0], found[1])


def check_inputs(texts: list[str], files: ModelFiles | None) -> None:
    """UserError naming the first of ``texts`` that the task of a model refuses (see
    :meth:`attnlab.plugins.Task.check_source`), before any model is loaded; ``files``: the
    model's config and saved task (:func:`model_files`)."""
    if files is None:
        return
    from attnlab.data.sources import first_problem
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.saved_task import saved_tasks

    try:
        tasks = saved_tasks(ExperimentConfig.model_validate(files[0]), files[1])
    except Exception:  # noqa: BLE001  only a head start: loading the model reports why
        return
    problem = first_problem(texts, *tasks)
    if problem is not None:
        raise UserError(problem)


def load_model(model: str | None, uri: str | None) -> tuple[str, Predictor]:
    """(uri, :class:`~attnlab.model.predictor.Predictor`) for --model: a bundle folder or the
    MLflow model at ``uri``; torch takes the cores other work leaves free."""
    use_free_cores(say=False)
    folder = bundle_folder(model)
    if folder is not None:
        from attnlab.model.predictor import Predictor

        return str(model), Predictor.load(folder)
    from attnlab.flows.tracking import registry as model_registry

    assert uri is not None  # not a bundle folder: open_store resolved the model's URI
    return uri, model_registry.load_predictor(uri)


def check_task(task: str) -> None:
    """Refuse a --task that no installed plugin provides, as ``attnlab train`` does."""
    from attnlab.lab.sweep_options import unknown_plugin

    problem = unknown_plugin("task", task)
    if problem:
        raise UserError(f"--task: {problem}")


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


def predict_file(source: str, model: str | None, name: str, task: str, beam: int, json_output: bool, skip_bad: bool) -> None:
    """Predict the source lines of --file ``source`` (stdin for '-') in batches, printing each
    batch as it is decoded (see :mod:`attnlab.flows.cli.predict_lines`)."""
    from attnlab.flows.cli.predict_lines import open_input, predict_lines

    stream = open_input(source)
    try:
        _, predictor = load_model(model, None if bundle_folder(model) else open_store(model, name, task))

        def decode(texts: list[str]) -> list[str]:
            return [r.output for r in predictor.predict(texts, beam)]

        predict_lines(stream, predictor.issue, decode, json_output, skip_bad, "stdin" if source == "-" else repr(source))
    finally:
        stream.close()


def predict(
    texts: Sources = None,
    model: ModelUri = None,
    task: ChampionTask = "date",
    model_name: ChampionName = None,
    plot: HeatmapFile = None,
    html: ExplorerFile = None,
    file: SourcesFile = None,
    skip_bad: SkipBad = False,
    beam_size: Beams = None,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Predict with a trained model: one line per input (default: the task's champion).

    The sources are the arguments, or the lines of --file PATH ('-': stdin). A refused source
    refuses the whole input before anything is printed; with --file, --skip-bad goes on instead,
    and --json prints one object a line.
    """
    quiet(verbose)
    with user_errors():
        texts = texts or []
        source, beam = input_options(texts, file, skip_bad, beam_size, plot, html)
        check_model_option(model)
        check_task(task)
        name = chosen_model(model_name, model, task)
        if source is not None:
            predict_file(source, model, name, task, beam, json_output, skip_bad)
            return
        check_outputs(plot, html, len(texts))
        uri, predictor, results = predict_texts(texts, model, name, task, beam)
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


def chosen_model(model_name: str | None, model: str | None, task: str) -> str:
    """The registered model whose champion ``predict`` uses: ``--model-name`` (refused beside
    ``--model``, and when not a safe name), else ``attnlab-<task>``."""
    from attnlab.lab.names import check_name
    from attnlab.lab.names import model_name as default_name

    if model_name is None:
        return default_name(task)
    if model is not None:
        raise UserError(f"--model-name {model_name!r} chooses a champion and --model {model!r} a model: give one of them")
    return check_name(model_name, "--model-name")


def predict_texts(texts: list[str], model: str | None, name: str, task: str, beam: int) -> tuple[str, Predictor, list[Prediction]]:
    """(uri, predictor, predictions) of ``texts``: each input checked against the model's task
    before the model (and torch) loads, from the champion's files in the embedded store where it
    can, else from the bundle folder or the MLflow model."""
    files = None
    if model is None:  # the champion: its files read without MLflow, where the store allows
        from attnlab.flows.tracking.champion_config import champion_config
        from attnlab.flows.tracking.store import resolve_store

        where = resolve_store()
        files = champion_config(where.folder, name) if where.folder is not None else None
        check_inputs(texts, files)
    uri = None if bundle_folder(model) else open_store(model, name, task)
    if files is None:  # not read yet: from the bundle folder or the MLflow model
        check_inputs(texts, model_files(model, uri))  # before torch and the model load
    uri, predictor = load_model(model, uri)
    try:
        return uri, predictor, predictor.predict(texts, beam)
    except ValueError as exc:
        raise UserError(str(exc)) from None
