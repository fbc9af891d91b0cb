"""A Ctrl-C that lands in a sweep's or a tune's worker process must travel back to the parent:
the exception a worker sends is pickled with its context (tblib's pickling support, which Dask
installs), and an interrupt that cut into library code can carry a context that does not pickle."""

import pickle
import weakref

import pytest
from tblib import pickling_support

from attnlab.flows.run.flow_runs import interrupt_alone


class _Registered:
    pass


def _interrupted_inside_a_lookup() -> None:
    try:
        raise KeyError(weakref.ref(_Registered))  # as in SQLAlchemy's first use of a class
    except KeyError:
        raise KeyboardInterrupt from None


@pytest.fixture
def exceptions_pickled_with_their_context():
    pickling_support.install()
    yield
    import copyreg

    for cls in list(copyreg.dispatch_table):
        if isinstance(cls, type) and issubclass(cls, BaseException) or cls.__name__ == "traceback":
            del copyreg.dispatch_table[cls]


def test_an_interrupt_comes_out_of_a_worker_without_what_it_interrupted(exceptions_pickled_with_their_context):
    with pytest.raises(KeyboardInterrupt) as raised:
        _interrupted_inside_a_lookup()
    with pytest.raises(TypeError, match="weakref"):
        pickle.dumps(raised.value)  # the failure the worker would die of

    with pytest.raises(KeyboardInterrupt) as raised:
        interrupt_alone(_interrupted_inside_a_lookup)
    assert isinstance(pickle.loads(pickle.dumps(raised.value)), KeyboardInterrupt)


def test_other_errors_keep_their_context():
    def fails() -> None:
        try:
            raise KeyError("config")
        except KeyError as exc:
            raise ValueError("bad config") from exc

    with pytest.raises(ValueError) as raised:
        interrupt_alone(fails)
    assert isinstance(raised.value.__cause__, KeyError)
    assert interrupt_alone(lambda: 7) == 7
