"""The MLflow pyfunc model of a trained attnlab model: text in, text out.

Input: a DataFrame with a ``source`` column of raw strings (or a list of strings); output: the
predicted strings, one per row. The model's one artifact is an attnlab bundle folder
(:mod:`attnlab.bundle`), so ``mlflow.pyfunc.load_model(...).predict`` and ``mlflow models serve``
work on text, and :meth:`AttnlabModel.predictions` gives the attention behind each output.
"""

from pathlib import Path
from typing import Any

import mlflow.pyfunc
import pandas as pd

#: Name of the bundle in the model's artifacts.
BUNDLE = "bundle"
#: Inputs decoded per batch.
BATCH = 512
#: The file MLflow logs as the model's code (see pyfunc_model.py).
MODEL_CODE = str(Path(__file__).with_name("pyfunc_model.py"))


def source_texts(model_input: Any) -> list[str]:
    """The source strings of a pyfunc input: a DataFrame's ``source`` column (or its only
    column), a Series, or a list of strings."""
    import pandas as pd

    if isinstance(model_input, pd.DataFrame):
        if "source" in model_input.columns:
            column = model_input["source"]
        elif len(model_input.columns) == 1:
            column = model_input.iloc[:, 0]
        else:
            raise ValueError(f"expected a 'source' column, got columns {list(model_input.columns)}")
        return [str(text) for text in column]
    if isinstance(model_input, pd.Series):
        return [str(text) for text in model_input]
    if isinstance(model_input, (list, tuple)):
        return [str(text) for text in model_input]
    if isinstance(model_input, str):
        return [model_input]
    raise ValueError(f"expected a DataFrame with a 'source' column, got {type(model_input).__name__}")


class AttnlabModel(mlflow.pyfunc.PythonModel):
    """Loads the bundle once; ``predict`` decodes greedily in batches."""

    def load_context(self, context) -> None:
        from attnlab.bundle import load_bundle

        self.config, self.task, self.model = load_bundle(Path(context.artifacts[BUNDLE]))

    def predictions(self, texts: list[str]):
        """attnlab Predictions (output, tokens, attention weights) for ``texts``; raises
        ValueError naming the first input the model cannot take."""
        from attnlab.predict import check_sources, predict

        check_sources(texts, self.task, self.model)
        results = []
        for start in range(0, len(texts), BATCH):
            results.extend(predict(self.model, self.task, texts[start : start + BATCH]))
        return results

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> list[str]:
        return [p.output for p in self.predictions(source_texts(model_input))]
