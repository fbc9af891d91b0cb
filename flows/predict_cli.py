"""``attnlab predict``: load a model (the task's champion, a registered version, a run's model or a
bundle folder), predict one line per input and optionally draw the heatmaps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from attnlab.flows.cli_support import quiet, user_errors
from attnlab.flows.errors import UserError


def register(app: typer.Typer) -> None:
    """Add ``predict`` to the ``attnlab`` app."""
    app.command()(predict)


def load_model(model: str | None, task: str):
    """(uri, config, task plugin, Seq2Seq) for --model: a local bundle folder, any MLflow model
    URI, or by default the champion of ``attnlab-<task>``."""
    if model and Path(model).is_dir() and (Path(model) / "config.json").exists():
        from attnlab.bundle import load_bundle

        config, task_plugin, seq2seq = load_bundle(Path(model))
        return model, config, task_plugin, seq2seq
    from attnlab.flows import model_registry
    from attnlab.flows.store import check_store, resolve_store, use_store

    store = resolve_store()
    if model is None:
        name = model_registry.model_name(task)
        if store.embedded and not (store.folder / "mlflow.db").exists():
            raise UserError(
                f"no registered model {name!r} yet (no MLflow store at {store.folder}); "
                f"train one first: attnlab train --task {task}"
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
    uri = model_registry.resolve_model_uri(model, task)
    python_model = model_registry.load_pyfunc(uri).unwrap_python_model()
    return uri, python_model.config, python_model.task, python_model.model


def _plot_paths(plot: Path, count: int) -> list[Path]:
    if count == 1:
        return [plot]
    return [plot.with_name(f"{plot.stem}-{i + 1}{plot.suffix or '.png'}") for i in range(count)]


def predict(
    texts: list[str] = typer.Argument(..., metavar="TEXT", help="source strings, e.g. 25-12-2023"),
    model: Optional[str] = typer.Option(
        None, metavar="URI", help="MLflow model URI (models:/NAME@ALIAS, models:/NAME/VERSION, runs:/ID/model) or a bundle folder"
    ),
    task: str = typer.Option("date", metavar="NAME", help="task whose champion to use when --model is not given"),
    plot: Optional[Path] = typer.Option(None, metavar="FILE.png", help="save the attention heatmap here (PNG; FILE-N.png for several inputs)"),
    json_output: bool = typer.Option(False, "--json", help="print one JSON object"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show MLflow's logs"),
) -> None:
    """Predict with a trained model: one line per input (default: the task's champion)."""
    quiet(verbose)
    with user_errors():
        uri, config, task_plugin, seq2seq = load_model(model, task)
        from attnlab.predict import check_sources, source_limit
        from attnlab.predict import predict as run_predict

        longest = source_limit(config)
        try:
            check_sources(texts, task_plugin, seq2seq, longest)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        results = run_predict(seq2seq, task_plugin, texts, longest=longest)
        saved = []
        if plot is not None:
            if any(r.weights is None for r in results):
                raise UserError(f"model {uri} does not attend (scorer 'none'); there is no heatmap to plot")
            from attnlab.plots import attention_heatmap, head_heatmaps, save_figure

            for result, path in zip(results, _plot_paths(plot, len(results))):
                title = f"{result.source} -> {result.output}"
                saved.append(str(save_figure(attention_heatmap(result.weights, result.source_tokens, result.output_tokens, title), path)))
                if result.head_weights is not None:
                    heads = path.with_name(f"{path.stem}-heads{path.suffix or '.png'}")
                    saved.append(str(save_figure(head_heatmaps(result.head_weights, result.source_tokens, result.output_tokens, title), heads)))
    if json_output:
        payload = {"model": uri, "predictions": [{"source": r.source, "prediction": r.output} for r in results], "plots": saved}
        typer.echo(json.dumps(payload, ensure_ascii=False))
        return
    for result in results:
        typer.echo(f"{result.source} -> {result.output}")
    for path in saved:
        typer.echo(f"saved {path}", err=True)
