"""The MLflow pyfunc model of a trained attnlab model: text in, text out.

Input: a DataFrame with a ``source`` column of raw strings (or a list of strings); output: the
predicted strings, one per row. Parameter ``beam_size`` (MLflow ``params``; default 1, greedy
decoding): decode by beam search with that many beams. The model's one artifact is an attnlab
bundle folder (:mod:`attnlab.model.bundle`), so ``mlflow.pyfunc.load_model(...).predict`` and ``mlflow models serve``
work on text, and :meth:`AttnlabModel.predictions` gives the attention behind each output.

Loading an MLflow model runs its code: :func:`model_code_problem` tells, before loading, whether
a model would run anything but the ``pyfunc_model.py`` this attnlab installs.
"""

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.models import ModelSignature
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc.model import PythonModel, PythonModelContext

if TYPE_CHECKING:  # torch comes with it
    from attnlab.model.predict import Prediction

#: Name of the bundle in the model's artifacts.
BUNDLE = "bundle"
#: Inputs decoded per batch.
BATCH = 512
#: The file MLflow logs as the model's code (see pyfunc_model.py).
MODEL_CODE = str(Path(__file__).with_name("pyfunc_model.py"))
#: sha256 of the pyfunc_model.py of earlier attnlab versions whose models must still load (when
#: that file changes, add its previous hash here).
EARLIER_MODEL_CODE: frozenset[str] = frozenset()


#: MLflow's loaders of a models-from-code pyfunc model (they run ``model_code_path`` alone).
CODE_LOADERS = frozenset({"mlflow.pyfunc.loaders.code_model", "mlflow.pyfunc.model"})


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def model_code_problem(model_dir: Path) -> str | None:
    """Why loading the MLflow model in local folder ``model_dir`` could run code other than
    attnlab's own, or None: it must be a models-from-code pyfunc model whose code file is byte for
    byte the ``pyfunc_model.py`` of this attnlab (or of an earlier version), with no extra code
    folder put on the import path."""
    import yaml

    try:
        meta = yaml.safe_load((model_dir / "MLmodel").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        return f"its MLmodel file cannot be read ({exc.__class__.__name__})"
    flavor = (meta.get("flavors") or {}).get("python_function") or {}
    code = flavor.get("model_code_path")
    if flavor.get("loader_module") not in CODE_LOADERS or not code:
        return "it is not an attnlab models-from-code model"
    if flavor.get("code"):
        return f"it puts its own code folder ({flavor['code']}) on the import path"
    try:
        digest = sha256(model_dir / Path(code).name)
    except OSError as exc:
        return f"its model code {Path(code).name} cannot be read ({exc.strerror or exc})"
    if digest != sha256(MODEL_CODE) and digest not in EARLIER_MODEL_CODE:
        return f"its {Path(code).name} (sha256 {digest[:12]}) differs from the one attnlab installs"
    return None


def signature() -> ModelSignature:
    """The model's signature: a string out and the ``beam_size`` parameter (default 1: greedy
    decoding). No input schema: the model reads its ``source`` column itself (:func:`source_texts`)
    and refuses what it cannot take in one sentence, where MLflow's own schema check answered a
    missing or extra column with a printout of the whole request."""
    from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema

    return ModelSignature(
        outputs=Schema([ColSpec("string")]),
        params=ParamSchema([ParamSpec("beam_size", "long", 1)]),
    )


def beam_size_param(params: dict[str, Any] | None) -> int:
    """The ``beam_size`` of a request's params (1 when not given); ValueError naming a bad one."""
    from attnlab.lab.predict_inputs import parse_beam_size

    return parse_beam_size((params or {}).get("beam_size", 1), "beam_size")


def source_texts(model_input: Any) -> list[str]:
    """The source strings of a pyfunc input: a DataFrame's ``source`` column (or the one column
    pandas makes of a plain list of strings, named 0), a Series, a list of strings, or the
    one-dimensional array MLflow's scoring server makes of ``{"inputs": [...]}``.
    ValueError, in one sentence, for a DataFrame without a ``source`` column and for a missing
    (null) value."""
    import pandas as pd

    if isinstance(model_input, pd.DataFrame):
        if "source" in model_input.columns:
            values = list(model_input["source"])
        elif list(model_input.columns) == [0]:  # {"inputs": ["25-12-2023", ...]}
            values = list(model_input.iloc[:, 0])
        else:
            raise ValueError(f"expected a 'source' column, got columns {', '.join(map(repr, model_input.columns))}")
    elif isinstance(model_input, (pd.Series, list, tuple)):
        values = list(model_input)
    elif getattr(model_input, "ndim", None) == 1:  # {"inputs": [...]} arrives as a numpy array
        values = model_input.tolist()
    elif isinstance(model_input, str):
        values = [model_input]
    else:
        raise ValueError(f"expected a DataFrame with a 'source' column, got {type(model_input).__name__}")
    missing = next((row for row, value in enumerate(values, 1) if value is None or (isinstance(value, float) and value != value)), None)
    if missing is not None:
        raise ValueError(f"row {missing}: the source is missing (null); give a string")
    return [str(value) for value in values]


class RefusedInput(MlflowException):
    """An input the served model refuses: HTTP 400, error code INVALID_PARAMETER_VALUE, and the
    reason as the body's whole message.

    MLflow's scoring server rewrites the message of an MlflowException raised in ``predict`` to
    ``Failed to predict data '<the input DataFrame printed>'. Error: <message>``; this message is
    set once, when the exception is made, and the rewrite leaves it as it is.
    """

    def __init__(self, reason: str) -> None:
        from attnlab.lab.serving import one_sentence

        super().__init__(one_sentence(reason), error_code=INVALID_PARAMETER_VALUE)

    @property
    def message(self) -> str:
        return self._reason

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_reason"):
            self._reason = value


class AttnlabModel(PythonModel):
    """Loads the bundle once; ``predict`` decodes in batches, greedily or by beam search (param
    ``beam_size``).

    A request of more than :data:`attnlab.lab.serving.MAX_ROWS` rows, or an input the model's task
    refuses (:meth:`attnlab.plugins.Task.check_source`: a date that does not exist, a text longer
    than the task's sources, foreign characters), raises :class:`RefusedInput`, which MLflow's
    scoring server answers with HTTP 400 and the one-sentence reason, without a stack trace; so is
    a ``beam_size`` param outside 1..:data:`attnlab.lab.config.MAX_BEAM`.
    """

    def load_context(self, context: PythonModelContext) -> None:
        from attnlab.model.predictor import Predictor

        self.predictor = Predictor.load(Path(context.artifacts[BUNDLE]))
        self.config, self.task, self.model = self.predictor.config, self.predictor.task, self.predictor.model

    def check(self, texts: list[str]) -> None:
        """Raise ValueError naming the first of ``texts`` the model cannot take (one longer than
        its task's sources included: decoding it would run for minutes)."""
        self.predictor.check(texts)

    def predictions(self, texts: list[str], beam_size: int = 1) -> "list[Prediction]":
        """attnlab Predictions (output, tokens, attention weights) for ``texts``, greedy or by beam
        search with ``beam_size`` beams (no weights then), :data:`BATCH` at a time; raises
        ValueError naming the first input the model cannot take (see :meth:`check`)."""
        return self.predictor.predict(texts, beam_size, batch=BATCH)

    def predict(self, context: PythonModelContext, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> list[str]:
        from attnlab.lab.serving import rows_problem

        try:
            texts = source_texts(model_input)
            problem = rows_problem(len(texts))
            if problem:
                raise ValueError(problem)
            beam_size = beam_size_param(params)
            self.check(texts)
        except ValueError as exc:
            raise RefusedInput(str(exc)) from None
        return [p.output for p in self.predictions(texts, beam_size)]
