"""How fragile a Bradley–Terry ranking is (pure): for each two systems adjacent by rating, the fewest votes whose
removal swaps them — a greedy upper bound.

The votes are removed in one fixed order — the upper's wins over the lower first, then the upper's other wins, then
the lower's losses — and the smallest prefix of that order whose removal puts the lower at or above the upper is
found by binary search. The search refits the Bradley–Terry likelihood with scipy (L-BFGS on the win matrix, ties as
half a win, a 1e-6 ridge so the scale is fixed), which is quick; the prefix found is then refitted with arena-rank,
whose ratings are the ones reported, and grown one vote at a time (at most :data:`CONFIRM_STEPS`) until arena-rank
agrees. A smaller set of votes, outside that order, may swap the two too: hence "upper bound".

The arena-rank fit itself (:func:`arena_ratings`) and the win matrix (:func:`score_matrix`) live here too, so that
``studio.results.ranking`` imports this module and not the other way round.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

FRAGILITY_COLUMNS: tuple[str, ...] = ("upper", "lower", "rating_gap", "votes_to_swap", "votes", "method")
FRAGILITY_METHOD = "greedy upper bound"
SIGNIFICANCE = 0.05
INSTALL_HINT = "the ranking needs arena-rank: pip install 'h2htalk-studio[ranking]'"
#: How many votes beyond the scipy search's answer arena-rank is asked to confirm, at most.
CONFIRM_STEPS = 5
RIDGE = 1e-6


def arena_ratings(frame: pd.DataFrame) -> pd.DataFrame:
    """arena-rank's Bradley–Terry fit of an LMArena battle frame (model_a, model_b, winner): one row per competitor
    (competitor, rating, lower, upper), in arena-rank's order. Raises ``RuntimeError`` without arena-rank."""
    try:
        from arena_rank.models.bradley_terry import BradleyTerry
        from arena_rank.utils.data_utils import PairDataset
    except ImportError as error:  # pragma: no cover - depends on the install
        raise RuntimeError(INSTALL_HINT) from error
    dataset = PairDataset.from_pandas(
        frame, competitor_cols=["model_a", "model_b"], outcome_col="winner", reweighted=False
    )
    model = BradleyTerry(n_competitors=dataset.n_competitors)
    fitted = model.compute_ratings_and_cis(dataset, significance_level=SIGNIFICANCE)
    return pd.DataFrame(
        {
            "competitor": list(fitted["competitors"]),
            "rating": np.asarray(fitted["ratings"], dtype=float),
            "lower": np.asarray(fitted["rating_lower"], dtype=float),
            "upper": np.asarray(fitted["rating_upper"], dtype=float),
        }
    )


def score_matrix(frame: pd.DataFrame, competitors: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, meetings)``: scores[i, j] = wins of i over j + ½ ties between them; meetings[i, j] = their votes."""
    index = {name: position for position, name in enumerate(competitors)}
    first = frame["model_a"].map(index).to_numpy()
    second = frame["model_b"].map(index).to_numpy()
    credit = frame["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    size = len(competitors)
    scores, meetings = np.zeros((size, size)), np.zeros((size, size))
    np.add.at(scores, (first, second), credit)
    np.add.at(scores, (second, first), 1.0 - credit)
    np.add.at(meetings, (first, second), 1.0)
    np.add.at(meetings, (second, first), 1.0)
    return scores, meetings


def scipy_ratings(scores: np.ndarray) -> np.ndarray:
    """Bradley–Terry log-strengths maximising sum S_ij log σ(r_i − r_j) − ridge·|r|²/2 (scipy L-BFGS)."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def loss(ratings: np.ndarray) -> tuple[float, np.ndarray]:
        gaps = ratings[:, None] - ratings[None, :]
        value = -float(np.sum(scores * log_expit(gaps))) + RIDGE * float(ratings @ ratings) / 2
        pull = scores * expit(-gaps)
        return value, -pull.sum(axis=1) + pull.sum(axis=0) + RIDGE * ratings

    start = np.zeros(scores.shape[0])
    return np.asarray(minimize(loss, start, jac=True, method="L-BFGS-B", options={"gtol": 1e-10}).x)


def removal_order(frame: pd.DataFrame, *, upper: str, lower: str) -> np.ndarray:
    """Row positions of ``frame`` (battles) in the order they are removed to swap ``upper`` and ``lower``."""
    a_won, b_won = frame["winner"] == "model_a", frame["winner"] == "model_b"
    upper_won = ((frame["model_a"] == upper) & a_won) | ((frame["model_b"] == upper) & b_won)
    lower_lost = ((frame["model_a"] == lower) & b_won) | ((frame["model_b"] == lower) & a_won)
    head = upper_won & lower_lost  # the upper's wins over the lower
    groups = [head, upper_won & ~head, lower_lost & ~head]
    return np.concatenate([np.flatnonzero(group.to_numpy()) for group in groups])


def _swapped_scipy(frame: pd.DataFrame, names: list[str], removed: np.ndarray, pair: tuple[int, int]) -> bool:
    kept = frame.drop(index=frame.index[removed])
    scores, _ = score_matrix(kept, names)
    ratings = scipy_ratings(scores)
    return bool(ratings[pair[1]] >= ratings[pair[0]])


def _swapped_arena(frame: pd.DataFrame, removed: np.ndarray, *, upper: str, lower: str) -> bool:
    kept = frame.drop(index=frame.index[removed]).reset_index(drop=True)
    fitted = arena_ratings(kept).set_index("competitor")["rating"]
    if upper not in fitted.index or lower not in fitted.index:
        return False
    return bool(fitted[lower] >= fitted[upper])


def votes_to_swap(frame: pd.DataFrame, *, upper: str, lower: str) -> int | None:
    """The greedy upper bound on the votes whose removal swaps ``upper`` and ``lower``; ``None`` when removing
    every vote of the order does not (arena-rank's refit is the judge)."""
    names = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    pair = (names.index(upper), names.index(lower))
    order = removal_order(frame, upper=upper, lower=lower)
    if len(order) == 0 or not _swapped_scipy(frame, names, order, pair):
        return None
    low, high = 1, len(order)
    while low < high:  # the smallest prefix that swaps them, by the scipy refit
        middle = (low + high) // 2
        if _swapped_scipy(frame, names, order[:middle], pair):
            high = middle
        else:
            low = middle + 1
    for count in range(low, min(low + CONFIRM_STEPS, len(order)) + 1):
        if _swapped_arena(frame, order[:count], upper=upper, lower=lower):
            return count
    return None


def fragility_table(frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """One row per two systems adjacent in ``table`` (best first): :data:`FRAGILITY_COLUMNS`, ``votes`` being all
    the votes of the fit; ``votes_to_swap`` empty where the order does not swap them."""
    ordered = table.sort_values("rating", ascending=False)
    names = [str(name) for name in ordered["competitor"]]
    ratings = [float(rating) for rating in ordered["rating"]]
    rows = []
    for position in range(len(names) - 1):
        count = votes_to_swap(frame, upper=names[position], lower=names[position + 1])
        rows.append(
            {
                "upper": names[position],
                "lower": names[position + 1],
                "rating_gap": ratings[position] - ratings[position + 1],
                "votes_to_swap": pd.NA if count is None else count,
                "votes": len(frame),
                "method": FRAGILITY_METHOD,
            }
        )
    return pd.DataFrame(rows, columns=list(FRAGILITY_COLUMNS)).astype({"votes_to_swap": "Int64"})


def fragility_lines(fragility: pd.DataFrame) -> list[str]:
    """One sentence per row of :func:`fragility_table`, for a terminal or a page."""
    lines = []
    for row in fragility.to_dict("records"):
        gap = f"{row['rating_gap']:.1f} points apart"
        pair = f"{row['upper']} over {row['lower']}"
        if pd.isna(row["votes_to_swap"]):
            lines.append(f"{pair} ({gap}): no swap within the removal order.")
        else:
            lines.append(
                f"{pair} ({gap}): removing {row['votes_to_swap']} of {row['votes']} votes swaps them ({row['method']})."
            )
    return lines
