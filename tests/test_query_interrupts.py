"""A Ctrl-C or SIGTERM that cuts into a store query ends the command without SQLAlchemy's report
of the cleanup that failed on the way out (a traceback under the command's one line); any other
failure SQLAlchemy reports is still printed."""

from __future__ import annotations

import io
import logging
import os
import signal
import sqlite3

import pytest
import sqlalchemy
from sqlalchemy import types
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class _CursorThatWillNotClose(sqlite3.Cursor):
    failing = False  # set once the rows are written (SQLAlchemy closes cursors of its own before)

    def close(self) -> None:
        if self.failing:
            raise sqlite3.ProgrammingError("Recursive use of cursors not allowed.")
        super().close()


class _Connection(sqlite3.Connection):
    def cursor(self, factory=_CursorThatWillNotClose):  # type: ignore[override]
        return super().cursor(factory)


class _Signalled(types.TypeDecorator):
    """An integer column whose reading of the value 3 does what the test sets in ``reading``."""

    impl = types.Integer
    cache_ok = True
    reading = staticmethod(lambda: None)

    def process_result_value(self, value, dialect):
        if value == 3:
            self.reading()
        return value


class _Base(DeclarativeBase):
    pass


class _Row(_Base):
    __tablename__ = "rows"
    id: Mapped[int] = mapped_column(primary_key=True)
    value: Mapped[int] = mapped_column(_Signalled)


@pytest.fixture
def terminal():
    """What a handler on the root logger prints (Prefect sets up one like it); the process is
    not interrupted yet, and is not left so."""
    pools = logging.getLogger("sqlalchemy.pool")
    level = pools.level
    pools.setLevel(logging.NOTSET)  # as a process that was never interrupted (an earlier test may have been)
    printed = io.StringIO()
    handler = logging.StreamHandler(printed)
    logging.root.addHandler(handler)
    yield printed
    logging.root.removeHandler(handler)
    pools.setLevel(level)


def _read_rows_while(reading, monkeypatch) -> None:
    """An ORM query of 5 rows, read 2 at a time, on a store whose cursors fail to close;
    ``reading()`` runs as the third row is read, while the cursor is open, and what it raises
    unwinds through SQLAlchemy, which closes the cursor on the way out, fails, and logs it."""
    engine = sqlalchemy.create_engine("sqlite://", creator=lambda: sqlite3.connect(":memory:", factory=_Connection))
    _Base.metadata.create_all(engine)
    monkeypatch.setattr(_Signalled, "reading", staticmethod(reading))
    try:
        with Session(engine) as session:
            session.add_all([_Row(value=value) for value in range(5)])
            session.commit()
            monkeypatch.setattr(_CursorThatWillNotClose, "failing", True)
            session.query(_Row).yield_per(2).all()
    finally:
        monkeypatch.setattr(_CursorThatWillNotClose, "failing", False)
        engine.dispose()


def test_a_ctrl_c_inside_a_query_of_a_command_prints_no_traceback(terminal, monkeypatch):
    from attnlab.flows.cli.support import interrupts_quietly

    with pytest.raises(KeyboardInterrupt), interrupts_quietly():
        _read_rows_while(lambda: os.kill(os.getpid(), signal.SIGINT), monkeypatch)
    assert terminal.getvalue() == ""


def test_a_ctrl_c_inside_a_query_of_a_sweep_worker_prints_no_traceback(terminal, monkeypatch):
    from attnlab.flows.sweep import worker_pool

    monkeypatch.setattr(worker_pool, "_busy", True)
    monkeypatch.setattr(worker_pool, "_interrupted", False)
    with pytest.raises(KeyboardInterrupt):
        _read_rows_while(lambda: worker_pool._on_interrupt(signal.SIGINT, None), monkeypatch)
    assert terminal.getvalue() == ""


def test_a_failed_cleanup_after_another_error_is_still_printed(terminal, monkeypatch):
    def disk_gone() -> None:
        raise OSError("the disk went away")

    with pytest.raises(OSError):
        _read_rows_while(disk_gone, monkeypatch)
    assert "Error closing cursor" in terminal.getvalue() and "Traceback" in terminal.getvalue()
