"""Inter-annotator agreement: Cohen's kappa for two annotators, Fleiss' kappa for more (pure functions).

- Cohen (1960): ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the share of items both
  annotators labelled the same and ``p_e = sum_k p_1k * p_2k`` the agreement expected from each
  annotator's own label frequencies.
- Fleiss (1971): ``kappa = (P_bar - P_e) / (1 - P_e)``, with ``P_i = (sum_k n_ik^2 - n_i) /
  (n_i (n_i - 1))`` the agreeing rater pairs of item i, ``P_bar`` their mean and ``P_e = sum_k p_k^2``
  from the pooled label shares. With the same number of raters per item this is Fleiss' statistic
  exactly; items rated by different numbers of annotators use each item's own ``n_i``.

Both are undefined (None) when chance agreement is already 1 (every label the same).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pearl_verl.errors import InputError


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two annotators' labels on the same items (aligned by position).

    Raises:
        InputError: for sequences of different lengths or no items.
    """
    if len(first) != len(second):
        raise InputError(f"cohen_kappa needs aligned labels; got {len(first)} and {len(second)}.")
    n = len(first)
    if n == 0:
        raise InputError("cohen_kappa needs at least one item rated by both annotators.")
    observed = sum(x == y for x, y in zip(first, second)) / n
    count_1, count_2 = Counter(first), Counter(second)
    expected = sum(count_1[k] * count_2[k] for k in count_1) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(items: Sequence[Mapping[str, int]]) -> float | None:
    """Fleiss' kappa from per-item label counts (``{label: annotators who chose it}``).

    Items with fewer than two ratings carry no agreement and are left out.

    Raises:
        InputError: for a negative count or no item with two or more ratings.
    """
    rated = [item for item in items if sum(item.values()) >= 2]
    if any(c < 0 for item in items for c in item.values()):
        raise InputError("fleiss_kappa counts must be >= 0.")
    if not rated:
        raise InputError("fleiss_kappa needs at least one item rated by two or more annotators.")
    agreement = []
    totals: Counter[str] = Counter()
    for item in rated:
        n_i = sum(item.values())
        agreement.append((sum(c * c for c in item.values()) - n_i) / (n_i * (n_i - 1)))
        totals.update(item)
    ratings = sum(totals.values())
    p_bar = sum(agreement) / len(agreement)
    p_e = sum((c / ratings) ** 2 for c in totals.values())
    if p_e == 1:
        return None
    return (p_bar - p_e) / (1 - p_e)
