"""Pairwise rankings: ``h2h ranking`` against arena-rank called directly and against statsmodels' own MLE.

Simulates ``--votes`` votes between ``--systems`` systems of known Bradley–Terry strengths, with a position bias
(the side shown first gets ``--bias`` logits) and ties, writes them as a votes file, runs ``h2h ranking`` on it and
compares its ratings with (1) arena-rank's ``BradleyTerry`` fitted directly on an LMArena battle frame (model_a,
model_b, winner) and (2) an independent MLE: statsmodels' binomial GLM on the ±1 design (one system as reference),
a tie entered as one win and one loss of weight ½ each, put on the same scale (400 / ln 10, mean 1000). Prints the
largest rating difference (goal ≤ 1 point), whether the order is the same, and the times of the fit and of the
fragility search. Run: ``.venv/bin/python benchmarks/bench_ranking.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def simulate(*, systems: int, votes: int, bias: float, tie_share: float, seed: int) -> pd.DataFrame:
    """Votes as ``h2h export votes`` writes a pairwise campaign's (model_a … value_shown)."""
    rng = np.random.default_rng(seed)
    strengths = np.linspace(1.0, -1.0, systems)
    first = rng.integers(0, systems, votes)
    second = (first + rng.integers(1, systems, votes)) % systems
    p_first = 1 / (1 + np.exp(-(strengths[first] - strengths[second] + bias)))
    chosen = np.where(rng.random(votes) < p_first, "A", "B")
    chosen = np.where(rng.random(votes) < tie_share, "tie", chosen)
    names = np.array([f"system-{index}" for index in range(systems)])
    return pd.DataFrame(
        {
            "item": np.arange(votes),
            "annotator": "sim",
            "question": "preference",
            "model_a": names[first],
            "variant_a": "base",
            "model_b": names[second],
            "variant_b": "base",
            "value": "",
            "value_shown": chosen,
        }
    )


def arena_direct(votes: pd.DataFrame) -> pd.Series:
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    battles = pd.DataFrame(
        {
            "model_a": votes["model_a"],
            "model_b": votes["model_b"],
            "winner": votes["value_shown"].map({"A": "model_a", "B": "model_b", "tie": "tie"}),
        }
    )
    dataset = PairDataset.from_pandas(battles, competitor_cols=["model_a", "model_b"], outcome_col="winner")
    fitted = BradleyTerry(n_competitors=dataset.n_competitors).compute_ratings_and_cis(dataset, 0.05)
    return pd.Series(np.asarray(fitted["ratings"]), index=fitted["competitors"])


def statsmodels_mle(votes: pd.DataFrame) -> pd.Series:
    """Bradley–Terry by statsmodels' binomial GLM: X[k] = e_a − e_b (first system dropped), ties as ½ + ½."""
    import statsmodels.api as sm

    names = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    index = {name: position for position, name in enumerate(names)}
    design = np.zeros((len(votes), len(names)))
    rows = np.arange(len(votes))
    design[rows, votes["model_a"].map(index).to_numpy()] += 1.0
    design[rows, votes["model_b"].map(index).to_numpy()] -= 1.0
    design = design[:, 1:]
    tie = (votes["value_shown"] == "tie").to_numpy()
    won = (votes["value_shown"] == "A").to_numpy().astype(float)
    outcome = np.concatenate([won, np.ones(tie.sum())])
    won[tie] = 0.0
    weights = np.concatenate([np.where(tie, 0.5, 1.0), np.full(tie.sum(), 0.5)])
    fit = sm.GLM(outcome, np.vstack([design, design[tie]]), family=sm.families.Binomial(), freq_weights=weights).fit()
    natural = np.concatenate([[0.0], np.asarray(fit.params)])
    scaled = natural * 400 / np.log(10)
    return pd.Series(scaled - scaled.mean() + 1000.0, index=names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--votes", type=int, default=5000)
    parser.add_argument("--bias", type=float, default=0.2, help="logits added to the side shown first")
    parser.add_argument("--ties", type=float, default=0.1, help="share of votes that are ties")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from click.testing import CliRunner

    from studio.commands.ranking import ranking_command
    from studio.results.ranking import battles, bradley_terry
    from studio.results.ranking_fragility import fragility_table

    votes = simulate(systems=args.systems, votes=args.votes, bias=args.bias, tie_share=args.ties, seed=args.seed)
    with tempfile.TemporaryDirectory() as folder:
        path, output = Path(folder) / "votes.csv", Path(folder) / "ranking.csv"
        votes.to_csv(path, index=False)
        started = time.perf_counter()
        result = CliRunner().invoke(ranking_command, ["--votes", str(path), "-o", str(output)])
        command_seconds = time.perf_counter() - started
        assert result.exit_code == 0, result.output
        ours = pd.read_csv(output).set_index("competitor")["rating"]
    started = time.perf_counter()
    fit = bradley_terry(votes, fragility=False)
    fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    fragility = fragility_table(battles(votes), fit.table)
    fragility_seconds = time.perf_counter() - started
    direct, other = arena_direct(votes), statsmodels_mle(votes)
    order = list(ours.index)
    print(f"{args.systems} systems, {args.votes} votes, position bias {args.bias} logits, {args.ties:.0%} ties")
    print(f"h2h ranking vs arena-rank direct:  max |Δrating| = {np.max(np.abs(ours - direct[order])):.2e} points, "
          f"same order: {order == list(direct.sort_values(ascending=False).index)}")  # fmt: skip
    print(f"h2h ranking vs statsmodels GLM:    max |Δrating| = {np.max(np.abs(ours - other[order])):.2e} points, "
          f"same order: {order == list(other.sort_values(ascending=False).index)}")  # fmt: skip
    print(str(fit.position_bias["sentence"]))
    print(f"fit (arena-rank, warm): {fit_seconds:.2f} s")
    print(f"fragility search ({len(fragility)} pairs): {fragility_seconds:.2f} s")
    print(f"whole h2h ranking command (cold, incl. JAX compile): {command_seconds:.2f} s")
    print("votes to swap:", ", ".join(str(count) for count in fragility["votes_to_swap"]))


if __name__ == "__main__":
    main()
