"""MLflow "models from code" entry point of the attnlab pyfunc model.

MLflow copies this file into every logged model and runs it when the model is loaded, instead of
unpickling an object. Loading needs ``attnlab`` installed.
"""

import mlflow.models

from attnlab.flows.pyfunc import AttnlabModel

mlflow.models.set_model(AttnlabModel())
