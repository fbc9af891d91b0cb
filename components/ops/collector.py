"""How often attnlab's own processes run Python's garbage collector.

Importing torch, prefect and mlflow creates about a million objects that live as long as the
process. At Python's default pace (a young-generation collection every 700 allocations, the
oldest generation scanned again each time it has grown by a quarter) the collector walks that heap
over and over while the imports run: a one-epoch ``attnlab train`` of 200 examples spent 1.9 of
its 13.9 CPU-s in 2,037 collections; 20,000 allocations apart, 0.6 of 11.4 in 101
(``benchmarks/bench_collector_pace.py`` measures it). Everything that is garbage is still
found; only later, by a young generation of at most 20,000 objects.

:func:`collect_less_often` is called first thing by the processes attnlab starts itself (the
``attnlab`` command, its server child, a sweep's or a tune's workers). A Python program that
imports attnlab keeps its own collector settings.
"""

from __future__ import annotations

import gc

#: (young, middle, old) thresholds: a young collection every 20,000 net allocations, Python's
#: ratios for the older two.
THRESHOLDS = (20_000, 10, 10)


def collect_less_often() -> None:
    """Set the collector's thresholds to :data:`THRESHOLDS` for this process."""
    gc.set_threshold(*THRESHOLDS)
