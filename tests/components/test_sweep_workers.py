"""A sweep's parallelism and the threads of each of its runs."""

from __future__ import annotations

from attnlab.ops.sweep_workers import Workers, sweep_workers


def test_a_local_sweep_runs_one_per_core_and_shares_the_cores():
    assert sweep_workers(runs=12, max_parallel=None, remote=False, cores=4) == Workers(4, 1)
    assert sweep_workers(runs=2, max_parallel=None, remote=False, cores=8) == Workers(2, 4)


def test_the_users_parallelism_wins_and_threads_follow_the_runs_at_once():
    assert sweep_workers(runs=6, max_parallel=3, remote=False, cores=12) == Workers(3, 4)
    assert sweep_workers(runs=2, max_parallel=8, remote=False, cores=8) == Workers(8, 4)  # two runs: two shares


def test_a_remote_cluster_gets_every_run_at_once_and_sizes_its_own_threads():
    assert sweep_workers(runs=10, max_parallel=None, remote=True, cores=2) == Workers(10, None)
    assert sweep_workers(runs=10, max_parallel=3, remote=True, cores=2) == Workers(3, None)


def test_local_runs_share_only_the_cores_other_work_leaves_free():
    assert sweep_workers(runs=2, max_parallel=None, remote=False, cores=8, busy=4.2) == Workers(2, 2)
    assert sweep_workers(runs=12, max_parallel=None, remote=False, cores=2, busy=2.0) == Workers(2, 1)  # at least one thread
    assert sweep_workers(runs=1, max_parallel=None, remote=False, cores=8, busy=0.3) == Workers(1, 8)
    assert sweep_workers(runs=10, max_parallel=None, remote=True, cores=2, busy=2.0) == Workers(10, None)
