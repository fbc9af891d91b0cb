"""``attnlab server`` refuses a wait limit that is no limit in one line, before starting anything
(--timeout -5 started both servers, then failed; nan and inf waited for ever)."""

from __future__ import annotations

import pytest
from _flowkit import assert_one_line_error

from attnlab.flows.cli.app import main


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_server_refuses_a_non_positive_or_endless_timeout_before_starting(capsys, empty_store, tmp_path, monkeypatch, value):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["server", "--timeout", value, "--prefect-port", "4391", "--mlflow-port", "5391"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_line_error(err, f"--timeout {float(value)}", "give a positive number of seconds")
    assert not (tmp_path / "cache").exists() and not empty_store.exists()  # no server was started
