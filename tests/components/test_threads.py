"""A run takes the cores other work leaves free: the arithmetic, the reading of /proc/stat, and a
real measurement beside busy loops."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnlab.ops.threads import SPIN_COUNT, busy_cores, chosen_threads, cpu_jiffies, thread_params, threads_for_load, wait_settings


@pytest.mark.parametrize(
    ("cores", "busy", "threads"),
    [(2, 0.0, 2), (2, 0.3, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 2.0, 1), (2, 4.0, 1), (8, 2.2, 6), (8, -0.1, 8)],
)
def test_a_run_takes_the_free_cores_at_least_one(cores, busy, threads):
    assert threads_for_load(cores, busy) == threads


@pytest.mark.parametrize(
    ("environ", "added"),
    [
        ({}, {"GOMP_SPINCOUNT": str(SPIN_COUNT)}),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, {}),  # the user's policy: no spin count that would override it
        ({"OMP_WAIT_POLICY": "ACTIVE"}, {}),
        ({"GOMP_SPINCOUNT": "5"}, {}),
    ],
)
def test_idle_threads_spin_briefly_unless_the_user_chose_how_they_wait(environ, added):
    assert wait_settings(environ) == added


def test_a_runs_params_say_how_its_threads_wait(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("GOMP_SPINCOUNT", "1000")
    assert thread_params(2) == {"torch_threads": "2", "omp_wait_policy": "(OpenMP's default)", "gomp_spincount": "1000"}


def test_proc_stat_counts_busy_and_total_ticks():
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = "cpu  100 5 20 800 50 3 2 0 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert cpu_jiffies(line) == (130, 980)


def test_the_load_is_none_where_proc_stat_is_missing(tmp_path):
    assert busy_cores(2, seconds=0.0, stat=tmp_path / "stat") is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux's /proc/stat")
def test_beside_a_busy_loop_per_core_a_run_takes_one_thread():
    cores = os.cpu_count() or 1
    loop = [sys.executable, "-c", f"import os\nwhile os.getppid() == {os.getpid()}: pass"]
    loops = [subprocess.Popen(loop) for _ in range(cores)]
    try:
        assert busy_cores(cores, seconds=1.0) > cores - 0.6
        threads, why = chosen_threads(cores)
        assert threads == 1 and why.endswith(f"of {cores} cores busy with other work")
    finally:
        for process in loops:
            process.kill()
            process.wait()


def test_the_load_of_pinned_cores_is_read_from_their_own_lines():
    stat = "cpu  100 0 0 100 0 0 0 0 0 0\ncpu0 90 0 0 10 0 0 0 0 0 0\ncpu1 10 0 0 90 0 0 0 0 0 0\ncpu2 0 0 0 5 0 0 0 0 0 0\n"
    assert cpu_jiffies(stat, [1]) == (10, 100)
    assert cpu_jiffies(stat, [0, 2]) == (90, 105)
    with pytest.raises(ValueError, match="no line"):
        cpu_jiffies(stat, [7])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="CPU affinity on 2+ cores")
def test_a_run_pinned_to_one_core_takes_one_thread_and_measures_that_core():
    probe = (
        "import os\nos.sched_setaffinity(0, {0})\n"
        "from attnlab.ops.threads import chosen_threads, thread_share, usable_cores\n"
        "threads, why = chosen_threads()\nprint(usable_cores(), thread_share(1), threads, why)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split()[:3] == ["1", "1", "1"] and out.strip().endswith("of 1 cores busy with other work")
