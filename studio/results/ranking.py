"""Rankings from a pairwise campaign's votes (pure): Bradley–Terry, win rates, position bias, rank fragility.

Input is one row per vote (:data:`VOTE_COLUMNS`, as ``h2h export votes`` writes them): what that person saw as A
(``model_a``/``variant_a``) and B, and ``value_shown`` ∈ A / B / tie. A *system* is the model when every vote shares
one variant, the variant when every vote shares one model, else ``model / variant`` (:func:`system_labels`).

* :func:`bradley_terry` fits LMArena's ``arena-rank`` Bradley–Terry model (plain, unweighted: every vote counts
  once; a tie is half a win for each side), ratings on the Elo-like scale (400 points = 10:1 odds, mean 1000) with
  its sandwich 95% intervals; rank 1 is the highest rating.
* the win-rate matrix: row beats column, (wins + ½ ties) / votes between the two, NaN where they never met.
* position bias: the share of decided (non-tie) votes won by the side shown first (A), with scipy's Wilson 95%
  interval; material when that interval excludes ½.
* fragility: for each two systems adjacent by rating, the fewest votes whose removal swaps them, as a *greedy upper
  bound*: votes are removed in a fixed order (the upper's wins over the lower, the upper's other wins, the lower's
  losses) and the smallest such prefix that swaps them is found by binary search, refitting the same likelihood
  with scipy for the search and confirming the found prefix with arena-rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from studio.results.ranking_fragility import (
    FRAGILITY_COLUMNS,
    SIGNIFICANCE,
    arena_ratings,
    fragility_table,
    score_matrix,
)

#: What :func:`bradley_terry` reads from each vote.
VOTE_COLUMNS: tuple[str, ...] = ("model_a", "variant_a", "model_b", "variant_b", "value_shown")
#: The choices a vote may hold (``value_shown``).
CHOICES: tuple[str, ...] = ("A", "B", "tie")
RANKING_COLUMNS: tuple[str, ...] = (
    "competitor", "rating", "lower", "upper", "rank", "votes", "wins", "losses", "ties",
)  # fmt: skip
RULE = (
    "Bradley–Terry ratings by arena-rank (LMArena), unweighted: each vote counts once and a tie is half a win for "
    "each side; 400 points = 10:1 odds, mean 1000; 95% sandwich intervals. Win rate: row beats column, "
    "(wins + ½ ties) / votes between them. Position bias: share of decided votes won by the side shown first (A), "
    "Wilson 95% interval. Votes to swap: the fewest votes whose removal swaps two neighbours — a greedy upper bound."
)


@dataclass(frozen=True)
class Ranking:
    """A pairwise campaign's ranking: ``table`` (:data:`RANKING_COLUMNS`, best first), ``win_rates`` and ``meetings``
    (square frames over the competitors: row beats column, and votes between them), ``position_bias`` (a dict:
    first_wins, decided, share, lower, upper, material, sentence) and ``fragility`` (:data:`FRAGILITY_COLUMNS`)."""

    table: pd.DataFrame
    win_rates: pd.DataFrame
    meetings: pd.DataFrame
    position_bias: dict[str, object]
    fragility: pd.DataFrame


def system_labels(votes: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """The competitor of side A and of side B of each vote (see the module for the naming rule)."""
    models = pd.concat([votes["model_a"], votes["model_b"]]).fillna("").astype(str)
    variants = pd.concat([votes["variant_a"], votes["variant_b"]]).fillna("").astype(str)
    if variants.nunique() <= 1:
        names = models
    elif models.nunique() <= 1:
        names = variants
    else:
        names = models + " / " + variants
    count = len(votes)
    return names.iloc[:count].reset_index(drop=True), names.iloc[count:].reset_index(drop=True)


def battles(votes: pd.DataFrame) -> pd.DataFrame:
    """LMArena's battle format of ``votes``: model_a, model_b (competitor names) and winner (model_a, model_b, tie).

    Raises ``ValueError`` for a missing column or a choice outside :data:`CHOICES`."""
    missing = [column for column in VOTE_COLUMNS if column not in votes.columns]
    if missing:
        raise ValueError(f"votes lack the columns {', '.join(missing)}")
    bad = sorted(set(votes["value_shown"].astype(str)) - set(CHOICES))
    if bad:
        raise ValueError(f"value_shown must be one of {', '.join(CHOICES)}; got {', '.join(bad)}")
    side_a, side_b = system_labels(votes)
    winner = votes["value_shown"].astype(str).map({"A": "model_a", "B": "model_b", "tie": "tie"})
    return pd.DataFrame({"model_a": side_a, "model_b": side_b, "winner": winner.to_numpy()})


def _tallies(frame: pd.DataFrame) -> pd.DataFrame:
    """Per competitor: votes taken part in, wins, losses, ties."""
    long = pd.concat(
        [
            pd.DataFrame({"competitor": frame["model_a"], "won": frame["winner"] == "model_a"}),
            pd.DataFrame({"competitor": frame["model_b"], "won": frame["winner"] == "model_b"}),
        ]
    )
    long["tie"] = np.concatenate([(frame["winner"] == "tie").to_numpy()] * 2)
    long["lost"] = ~long["won"] & ~long["tie"]
    grouped = long.groupby("competitor")
    return pd.DataFrame(
        {
            "votes": grouped.size(),
            "wins": grouped["won"].sum(),
            "losses": grouped["lost"].sum(),
            "ties": grouped["tie"].sum(),
        }
    ).astype(int)


def position_bias(frame: pd.DataFrame) -> dict[str, object]:
    """The share of decided votes the side shown first (A) won, with scipy's Wilson 95% interval, and a sentence."""
    from scipy.stats import binomtest

    first_wins = int((frame["winner"] == "model_a").sum())
    decided = int(frame["winner"].isin(["model_a", "model_b"]).sum())
    if decided == 0:
        return {"first_wins": 0, "decided": 0, "share": None, "lower": None, "upper": None, "material": False,
                "sentence": "Position bias: no decided vote (every vote is a tie), so nothing to measure."}  # fmt: skip
    interval = binomtest(first_wins, decided).proportion_ci(confidence_level=1 - SIGNIFICANCE, method="wilson")
    lower, upper = float(interval.low), float(interval.high)
    material = not lower <= 0.5 <= upper
    verdict = "material: the interval excludes ½" if material else "not material: the interval includes ½"
    share = first_wins / decided
    sentence = (
        f"Position bias: the side shown first (A) won {first_wins} of {decided} decided votes "
        f"({share:.1%}, 95% Wilson interval {lower:.1%}–{upper:.1%}) — {verdict}."
    )
    return {"first_wins": first_wins, "decided": decided, "share": share, "lower": lower, "upper": upper,
            "material": material, "sentence": sentence}  # fmt: skip


def bradley_terry(votes: pd.DataFrame, *, fragility: bool = True) -> Ranking:
    """The :class:`Ranking` of a pairwise campaign's ``votes`` (:data:`VOTE_COLUMNS`); see the module.

    Raises ``ValueError`` for bad votes or fewer than two systems, ``RuntimeError`` without arena-rank."""
    frame = battles(votes)
    fitted = arena_ratings(frame)
    if len(fitted) < 2:
        raise ValueError("a ranking needs votes between at least two systems")
    table = fitted.join(_tallies(frame), on="competitor")
    table = table.sort_values(["rating", "competitor"], ascending=[False, True]).reset_index(drop=True)
    table.insert(4, "rank", np.arange(1, len(table) + 1))
    competitors = table["competitor"].tolist()
    scores, meetings = score_matrix(frame, competitors)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(meetings > 0, scores / np.where(meetings > 0, meetings, 1), np.nan)
    fragile = fragility_table(frame, table) if fragility else pd.DataFrame(columns=list(FRAGILITY_COLUMNS))
    return Ranking(
        table=table[list(RANKING_COLUMNS)],
        win_rates=pd.DataFrame(rates, index=competitors, columns=competitors),
        meetings=pd.DataFrame(meetings.astype(int), index=competitors, columns=competitors),
        position_bias=position_bias(frame),
        fragility=fragile,
    )


def win_rate_rows(ranking: Ranking) -> pd.DataFrame:
    """The win-rate matrix as rows (competitor, then one column per opponent), cells rounded to 3 places, with the
    votes between them: ``0.625 (8)``; empty where they never met, ``—`` on the diagonal."""
    rows = []
    for name in ranking.win_rates.index:
        row: dict[str, str] = {"competitor": name}
        for other in ranking.win_rates.columns:
            count = int(ranking.meetings.loc[name, other])
            rate = ranking.win_rates.loc[name, other]
            row[other] = "—" if name == other else ("" if count == 0 else f"{rate:.3f} ({count})")
        rows.append(row)
    return pd.DataFrame(rows, columns=["competitor", *ranking.win_rates.columns])
