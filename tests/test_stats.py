"""Confidence intervals against textbook values and hand computation."""

import math

import pytest

from pearl_verl.stats import mean_ci, t_quantile, wilson_ci


@pytest.mark.parametrize(
    ("df", "table"),
    [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228), (30, 2.042), (120, 1.980)],
)
def test_t_quantile_matches_the_t_table(df, table):
    assert t_quantile(0.975, df) == pytest.approx(table, abs=1e-3)


def test_t_quantile_is_antisymmetric_and_validates():
    assert t_quantile(0.025, 7) == pytest.approx(-t_quantile(0.975, 7))
    with pytest.raises(ValueError, match="must lie in"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="df=0"):
        t_quantile(0.9, 0)


def test_mean_ci_by_hand():
    # values 1..4: mean 2.5, unbiased sd sqrt(5/3), t(0.975, 3) = 3.182 -> half width 3.182 * 1.2910 / 2
    estimate = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert estimate.mean == 2.5
    assert estimate.half_width == pytest.approx(3.182 * math.sqrt(5 / 3) / 2, abs=2e-3)
    assert estimate.n == 4
    single = mean_ci([0.7])
    assert (single.low, single.high, single.half_width) == (0.7, 0.7, 0.0)
    with pytest.raises(ValueError, match="at least one"):
        mean_ci([])


def test_wilson_by_hand_and_at_the_bounds():
    # 8 of 10, z = 1.95996: centre (0.8 + z^2/20) / (1 + z^2/10), half z*sqrt(0.016 + z^2/400) / (1 + z^2/10)
    z = 1.959964
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    estimate = wilson_ci(8, 10)
    assert estimate.mean == 0.8
    assert estimate.low == pytest.approx(centre - half, abs=1e-6)
    assert estimate.high == pytest.approx(centre + half, abs=1e-6)
    assert wilson_ci(0, 5).low == 0.0 and wilson_ci(0, 5).high > 0.3
    assert wilson_ci(5, 5).high == 1.0 and wilson_ci(5, 5).low < 0.7
    with pytest.raises(ValueError, match="successes=6"):
        wilson_ci(6, 5)
