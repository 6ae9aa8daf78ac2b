"""How much of a weighted Z curve each axis earns: the bits of the key prefix the workload needs on it.

A filter keeping a share ``s`` of an axis reads about ``s + (1 - s) * 2**-k`` of the table along it
when the prefix that picks row groups holds ``k`` of the axis's bits (the row groups at the range's
edges come along: all of it with no bit, ``s`` with many); a query filtering several axes reads the
product.  The prefix has as many bits as it
takes to pick one of the layout's row groups.  They are handed out one at a time, each to the axis
whose extra bit saves the workload most rows, and the weights are the shares that result: a Z curve
weighted so gives each axis that part of every prefix (``zskip.curves.interleave.weighted_bit_order``).
The simulation then says whether the weighted curve reads less than the even one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["axis_weights", "prefix_bits"]

STEP = 0.5  # weights are rounded to this: a finer difference moves no bit of a short prefix


def prefix_bits(shares: Sequence[Sequence[float | None]], scans: Sequence[int], bits: int) -> list[int]:
    """How many of the prefix's ``bits`` each axis gets: ``shares[a][q]`` is the share of rows query
    ``q``'s conditions on axis ``a`` keep (``None``: it sets none), ``scans[q]`` how often it ran.

    >>> prefix_bits([[0.001, 0.001, 0.001, None], [None, None, None, 0.5]], [1, 1, 1, 1], 6)
    [4, 2]
    >>> prefix_bits([[0.001], [0.001]], [1], 6)  # one query on both axes
    [3, 3]
    """
    queries = len(scans)
    taken = [0] * len(shares)

    def read(counts: Sequence[int]) -> float:
        total = 0.0
        for q in range(queries):
            factors = [
                share + (1.0 - share) * 2.0**-k
                for axis, k in zip(shares, counts, strict=True)
                if (share := axis[q]) is not None
            ]
            if factors:
                total += scans[q] * math.prod(factors)
        return total

    for _ in range(bits):
        costs = [read([k + (i == a) for i, k in enumerate(taken)]) for a in range(len(shares))]
        taken[min(range(len(shares)), key=lambda a: (costs[a], taken[a], a))] += 1
    return taken


def axis_weights(shares: Sequence[Sequence[float | None]], scans: Sequence[int], bits: int) -> tuple[float, ...] | None:
    """Weights in proportion to each axis's ``prefix_bits`` (an axis given none counts half a bit,
    the smallest weight is 1, rounded to ``STEP``), or ``None`` when they come out alike: the even
    curve is the candidate then.

    >>> axis_weights([[0.001, 0.001, 0.001, None], [None, None, None, 0.5]], [1, 1, 1, 1], 6)
    (2.0, 1.0)
    >>> axis_weights([[0.001], [0.001]], [1], 6) is None
    True
    """
    if not shares or bits < 1:
        return None
    taken = [max(k, 0.5) for k in prefix_bits(shares, scans, bits)]
    least = min(taken)
    weights = tuple(max(1.0, round(k / least / STEP) * STEP) for k in taken)
    return None if len(set(weights)) == 1 else weights
