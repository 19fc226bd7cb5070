"""Decision-preserving stopping (studio.results.stopping): curtail is exact over random crowds and vote orders; the
checker that says so catches a rule that stops one vote too early; predictive's probability is a probability."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest

from studio.results import stopping
from studio.results.stopping import (
    DecidedQuestion,
    check_stop,
    curtail_settled,
    outcome,
    predictive_probability,
    replay,
    replay_item,
)

QUOTA = 20
THREE = DecidedQuestion("verdict", ("keep", "revise", "discard"))
THREE_MIN_SHARE = DecidedQuestion("verdict", ("keep", "revise", "discard"), "plurality", 0.6)
ELEVEN = DecidedQuestion("subtask", tuple(f"t{index}" for index in range(11)), "strict_majority")
Settled = Callable[..., bool]


def random_orders(question: DecidedQuestion, *, crowds: int, seed: int) -> list[list[str]]:
    """20 votes per crowd in a random order: lopsided, mixed and contested crowds (label shares drawn from a
    Dirichlet whose concentration varies from crowd to crowd), each shuffled."""
    rng = np.random.default_rng(seed)
    labels = np.array(question.labels)
    orders = []
    for _ in range(crowds):
        concentration = rng.choice([0.2, 1.0, 5.0, 50.0])
        shares = rng.dirichlet(np.full(len(labels), concentration))
        votes = rng.choice(labels, size=QUOTA, p=shares)
        orders.append(list(rng.permutation(votes)))
    return orders


def first_counterexample(orders: list[list[str]], question: DecidedQuestion, settled: Settled) -> object:
    """The first (votes, stop) where stopping when ``settled`` says so gives another decision than all 20 votes."""
    labels = list(question.labels)
    for votes in orders:
        counts: dict[str, int] = {}
        for position, value in enumerate(votes, start=1):
            counts[value] = counts.get(value, 0) + 1
            if settled(counts, quota=QUOTA, question=question):
                at_stop = outcome([counts.get(label, 0) for label in labels], labels, question)
                full = outcome([votes.count(label) for label in labels], labels, question)
                if at_stop != full:
                    return votes, position
                break
    return None


def naive_settled(counts: Mapping[str, int], *, quota: int, question: DecidedQuestion) -> bool:
    """Stops one vote too early: a lead equal to the votes to come is taken as settled (and, for a strict majority,
    half of the quota as a majority)."""
    values = sorted(counts.values(), reverse=True) + [0, 0]
    remaining = quota - sum(counts.values())
    if question.kind == "strict_majority":
        return 2 * values[0] >= quota
    return values[0] - values[1] >= remaining


@pytest.mark.parametrize("question", [THREE, THREE_MIN_SHARE, ELEVEN], ids=["3-labels", "min-share", "11-strict"])
def test_curtail_keeps_the_full_quota_decision_every_time(question: DecidedQuestion) -> None:
    orders = random_orders(question, crowds=3000, seed=11)
    assert first_counterexample(orders, question, curtail_settled) is None
    for votes in orders[:500]:  # and the same through replay_item, as the replay command runs it
        used, at_stop, full = replay_item(votes, quota=QUOTA, question=question, rule="curtail")
        assert at_stop == full and 1 <= used <= QUOTA


@pytest.mark.parametrize("question", [THREE, ELEVEN], ids=["3-labels", "11-strict"])
def test_the_checker_catches_a_rule_that_stops_one_vote_early(question: DecidedQuestion) -> None:
    orders = random_orders(question, crowds=3000, seed=11)
    assert first_counterexample(orders, question, naive_settled) is not None


def test_curtail_saves_votes_on_lopsided_crowds() -> None:
    votes = ["keep"] * 20
    assert replay_item(votes, quota=QUOTA, question=THREE, rule="curtail")[0] == 11  # lead 11 > 9 to come
    assert not curtail_settled({"keep": 10}, quota=QUOTA, question=THREE)  # 10 to come could tie it


def test_curtail_with_min_share_waits_for_the_share_of_the_full_quota() -> None:
    assert curtail_settled({"keep": 11}, quota=QUOTA, question=THREE)
    assert not curtail_settled({"keep": 11}, quota=QUOTA, question=THREE_MIN_SHARE)  # 11/20 < 0.6
    assert curtail_settled({"keep": 12}, quota=QUOTA, question=THREE_MIN_SHARE)


def test_no_votes_never_stops() -> None:
    assert not check_stop({"verdict": {}}, quota=QUOTA, questions=[THREE], rule="curtail").stop
    assert not check_stop({}, quota=QUOTA, questions=[THREE], rule="predictive").stop


def naive_probability(counts: dict[str, int], question: DecidedQuestion) -> float:
    """The predictive probability by a plain loop over every way the remaining votes can fall."""
    labels = list(question.labels)
    values = [counts.get(label, 0) for label in labels]
    remaining = QUOTA - sum(values)
    alpha = np.array(values, dtype=float) + 1.0
    draws = stopping._compositions(remaining, len(labels))
    weights = np.exp(stopping._log_dirichlet_multinomial(draws, alpha))
    now = outcome(values, labels, question)
    return float(
        sum(w for row, w in zip(draws, weights, strict=True) if outcome(list(values + row), labels, question) == now)
    )


@pytest.mark.parametrize("question", [THREE, THREE_MIN_SHARE], ids=["3-labels", "min-share"])
def test_predictive_probability_is_a_probability_and_equals_the_plain_loop(question: DecidedQuestion) -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        counts = dict(
            zip(question.labels, (int(n) for n in rng.multinomial(rng.integers(1, 19), [0.5, 0.3, 0.2])), strict=True)
        )
        probability = predictive_probability(counts, quota=QUOTA, question=question)
        assert 0.0 <= probability <= 1.0
        assert probability == pytest.approx(naive_probability(counts, question), abs=1e-9)


@pytest.mark.parametrize(
    ("question", "counts"),
    [(THREE, {"keep": 4, "revise": 2, "discard": 1}), (THREE, {"keep": 3, "revise": 3})],
)
def test_exact_and_sampled_probabilities_agree(
    question: DecidedQuestion, counts: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stopping, "EXACT_LIMIT", 10**9)
    exact = predictive_probability(counts, quota=QUOTA, question=question)
    monkeypatch.setattr(stopping, "EXACT_LIMIT", 0)
    sampled = predictive_probability(counts, quota=QUOTA, question=question)
    assert 0.0 <= sampled <= 1.0
    assert sampled == pytest.approx(exact, abs=0.015)  # 20,000 draws: a standard error under 0.004


FOUR = DecidedQuestion("subtask", ("t0", "t1", "t2", "t3"), "strict_majority")


def test_strict_majority_probability_is_exact_however_many_labels() -> None:
    """The classification's forecast is beta-binomial per label (one label at most ends above half): equal to the
    plain loop over every way the votes can fall (4 labels), and to a direct simulation with 11 labels, where the loop
    would be millions of ways."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        counts = dict(
            zip(FOUR.labels, (int(n) for n in rng.multinomial(rng.integers(1, 19), [0.4, 0.3, 0.2, 0.1])), strict=True)
        )
        assert predictive_probability(counts, quota=QUOTA, question=FOUR) == pytest.approx(
            naive_probability(counts, FOUR), abs=1e-9
        )
    counts = {"t0": 5, "t1": 2, "t2": 1}
    alpha = np.array([counts.get(label, 0) for label in ELEVEN.labels], dtype=float) + 1.0
    finals = alpha - 1 + rng.multinomial(QUOTA - 8, rng.dirichlet(alpha, size=200_000))
    simulated = float(np.mean(2 * finals[:, 0] > QUOTA))  # t0 leads now: the outcome stays t0 when it ends above half
    assert predictive_probability(counts, quota=QUOTA, question=ELEVEN) == pytest.approx(simulated, abs=0.005)


def test_predictive_honours_min_votes() -> None:
    votes = ["keep"] * 20
    for min_votes in (1, 5, 8):
        used, _, _ = replay_item(votes, quota=QUOTA, question=THREE, rule="predictive", min_votes=min_votes)
        assert used >= min_votes
    # five votes alike are not yet 0.99 sure under the uniform prior, six are
    assert replay_item(votes, quota=QUOTA, question=THREE, rule="predictive", min_votes=5)[0] == 6
    assert not check_stop({"verdict": {"keep": 4}}, quota=QUOTA, questions=[THREE], rule="predictive").stop


def test_replay_counts_votes_and_names_changed_items() -> None:
    votes = {"a": ["keep"] * 20, "b": ["keep"] * 6 + ["discard"] * 14}
    report = replay(votes, quota=QUOTA, question=THREE, rule="predictive", confidence=0.9, min_votes=5).to_dict()
    assert report["items"] == 2 and report["votes_total"] == 40
    assert report["changed_items"] == [{"item": "b", "votes_at_stop": 5, "at_stop": "keep", "full": "discard"}]
    assert report["identical_fraction"] == 0.5
    curtailed = replay(votes, quota=QUOTA, question=THREE, rule="curtail").to_dict()
    assert curtailed["identical_fraction"] == 1.0 and curtailed["votes_used"] == 11 + 17
    assert curtailed["saved_fraction"] == pytest.approx(12 / 40)  # b: 11 discards after 6 keeps lead by 5 > 3
