"""A sweep's arms against its best one, seeds pooled."""

from __future__ import annotations

import pandas as pd

from attnlab.evaluation.arm_significance import against_best, format_marks, pooled_items, same_split


def table(sources: list[str], correct: list[bool]) -> pd.DataFrame:
    return pd.DataFrame({"source": sources, "correct": correct, "edits": [0 if c else 3 for c in correct], "tokens": [4] * len(sources)})


WORDS = [f"w{i}" for i in range(120)]


def test_a_corpus_task_sums_the_seeds_per_source():
    arm = {0: table(["a", "b"], [True, False]), 1: table(["a", "b"], [True, True])}
    assert same_split({"x": arm})
    items = pooled_items(arm, [0, 1], by_source=True)
    assert items.loc["a", "hits"] == 2 and items.loc["b", "hits"] == 1 and (items["count"] == 2).all()


def test_a_generated_task_pairs_within_each_seed():
    arm = {0: table(["a", "b"], [True, False]), 1: table(["c", "d"], [True, True])}
    assert not same_split({"x": arm})
    items = pooled_items(arm, [0, 1], by_source=False)
    assert list(items.index) == ["0:a", "0:b", "1:c", "1:d"] and (items["count"] == 1).all()


def test_each_arm_is_marked_against_the_best():
    best = {seed: table(WORDS, [True] * 120) for seed in (0, 1, 2)}
    close = {seed: table(WORDS, [i != seed for i in range(120)]) for seed in (0, 1, 2)}  # one miss per seed
    weak = {seed: table(WORDS, [i % 2 == 0 for i in range(120)]) for seed in (0, 1, 2)}
    marks = against_best({"close": close, "best": best, "weak": weak, "lost": {}}, resamples=300)
    assert marks["best"] == "best" and marks["level"] == 0.05 and "summed per test source" in marks["pooling"]
    arms = {arm["label"]: arm for arm in marks["arms"]}
    assert arms["weak"]["measures"]["exact_match"]["better"] == "a" and arms["weak"]["measures"]["exact_match"]["p_value"] < 0.01
    assert arms["weak"]["items"] == 120 and arms["weak"]["seeds"] == [0, 1, 2]
    assert arms["close"]["measures"]["exact_match"]["better"] is None  # 3 misses in 360 outputs: not significant
    assert arms["lost"]["measures"] is None and "no per-item outcomes" in arms["lost"]["note"]
    text = format_marks(marks)
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[2:] if line.strip() and not line.startswith("  ")}
    assert rows["best"] == ["best", "best", "best"] and rows["weak"][0] == "worse" and rows["close"][0] == "n.s."
    assert text.startswith("against the best arm (best): paired bootstrap, 300 resamples")
