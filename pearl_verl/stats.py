"""Confidence intervals for the evaluation tables (pure functions, no SciPy).

- Means (dimension scores, rounds): Student-t interval ``mean +- t_{0.975, n-1} * s / sqrt(n)``
  with the unbiased standard deviation ``s``. The t quantile comes from :func:`t_quantile`.
- Proportions (agreement, accuracy, success@k): the Wilson score interval, which stays inside
  [0, 1] and behaves at 0% and 100%, where the normal interval collapses to a point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from pearl_verl.errors import InputError


@dataclass(frozen=True)
class Estimate:
    """A mean with its two-sided confidence interval.

    Attributes:
        mean: the point estimate.
        low: lower end of the interval.
        high: upper end of the interval.
        n: observations behind it.
    """

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        """Half the interval's width (the ``+-`` of a table cell); 0 for a single observation."""
        return (self.high - self.low) / 2

    def scaled(self, factor: float) -> Estimate:
        """The same estimate with every value multiplied by ``factor`` (e.g. 100 for percent)."""
        return Estimate(self.mean * factor, self.low * factor, self.high * factor, self.n)

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def t_cdf_abs(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-26.7.4, exact)."""
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, term, total = math.cos(theta) ** 2, 1.0, 1.0
    if df % 2 == 0:
        for k in range(2, df, 2):  # 1 + 1/2 c^2 + 1*3/(2*4) c^4 + ... up to c^(df-2)
            term *= c2 * (k - 1) / k
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2 * theta / math.pi
    for k in range(3, df, 2):  # 1 + 2/3 c^2 + 2*4/(3*5) c^4 + ... up to c^(df-3)
        term *= c2 * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom.

    Exact (bisection on the closed-form CDF of :func:`t_cdf_abs`) up to 400 degrees of freedom;
    beyond, the Cornish-Fisher expansion around the normal quantile (A&S 26.7.5), whose error
    there is below 1e-6.

    Raises:
        InputError: for ``p`` outside (0, 1) or ``df < 1``.
    """
    if not 0 < p < 1:
        raise InputError(f"p={p} must lie in (0, 1).")
    if df < 1:
        raise InputError(f"df={df} must be >= 1.")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if df > 400:
        z = NormalDist().inv_cdf(p)
        v = float(df)
        return z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
    target = 2 * p - 1  # P(|T| <= t) for the upper quantile t
    low, high = 0.0, 1.0
    while t_cdf_abs(high, df) < target:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf_abs(mid, df) < target:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """The mean of ``values`` with its Student-t confidence interval.

    A single value gives a zero-width interval (no spread can be estimated from it).

    Raises:
        InputError: for no values or a confidence outside (0, 1).
    """
    if not values:
        raise InputError("mean_ci needs at least one value; got none.")
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence} must lie in (0, 1).")
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, mean, mean, 1)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n)


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """A proportion ``successes / n`` with its Wilson score interval.

    Raises:
        InputError: for ``n < 1`` or ``successes`` outside [0, n].
    """
    if n < 1:
        raise InputError(f"wilson_ci needs n >= 1 trials; got n={n}.")
    if not 0 <= successes <= n:
        raise InputError(f"successes={successes} must lie in [0, n={n}].")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exactly 0 / 1 at the bounds, not rounding noise
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, low, high, n)
