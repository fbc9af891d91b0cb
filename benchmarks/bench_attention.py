"""scaled_dot attention forward + backward against torch's fused kernel, in one run.

Shape [B, L, D] = [64, 32, 128] (self-attention: L queries over L keys, with a padding mask).
attnlab's training path (``context_only``) and its explicit path (``forward``: weights too) are
both timed against ``torch.nn.functional.scaled_dot_product_attention``.

Run: python benchmarks/bench_attention.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from attnlab.plugins import create_plugin

B, L, D = 64, 32, 128


def median_seconds(fns: dict, repeats: int, warmup: int = 20, clock=time.perf_counter) -> dict[str, float]:
    """Median seconds per call of each function, after ``warmup`` calls each, calling them in turn
    so drift hits all alike; ``clock`` reads the seconds (wall time by default,
    ``time.process_time`` for this process's CPU time)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            started = clock()
            fn()
            times[name].append(clock() - started)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, L, D, requires_grad=True) for _ in range(3))
    mask = torch.arange(L)[None, :] < torch.randint(L // 2, L + 1, (B,))[:, None]
    scorer = create_plugin("scorers", "scaled_dot", D, D)

    def fused():
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, :]).sum().backward()

    def training_path():
        scorer.context_only(q, k, v, mask).sum().backward()

    def explicit_path():
        scorer(q, k, v, mask).context.sum().backward()

    medians = median_seconds(
        {
            "torch fused scaled_dot_product_attention": fused,
            "attnlab scaled_dot, training path": training_path,
            "attnlab scaled_dot, explicit (weights)": explicit_path,
        },
        args.repeats,
    )
    base = medians["torch fused scaled_dot_product_attention"]
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; [B, L, D] = [{B}, {L}, {D}], "
        f"forward + backward, median of {args.repeats}"
    )
    for name, seconds in medians.items():
        print(f"  {name:<42} {seconds * 1e6:8.0f} us   {seconds / base:4.2f}x")


if __name__ == "__main__":
    main()
