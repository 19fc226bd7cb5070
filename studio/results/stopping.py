"""Decision-preserving stopping (ARCHITECTURE.md "Crowd decisions"): when an item's remaining votes stop mattering.

Pure functions on vote counts; the queue (:mod:`studio.services.stopping`) applies them after each stored vote and
``h2h stopping-replay`` replays a votes file through them. Two rules (a workflow's ``stopping:``,
:class:`studio.rules.StoppingRule`):

- ``curtail`` — exact: stop once no way the votes still to come (quota minus stored votes; open leases count as
  votes to come) could fall changes the decision the rule makes on the votes at the stop, ties included. So the
  decision at the stop equals the decision the full quota would have given, whatever the later votes would have
  been.
- ``predictive`` — stop once at least ``min_votes`` are stored and the posterior predictive probability that the
  full-quota decision equals the current one reaches ``confidence``. The remaining votes are modelled as a
  Dirichlet–multinomial draw (a uniform Dirichlet(1, …, 1) prior over the question's labels, updated by the votes so
  far), enumerated exactly where that is small and sampled (seeded) where it is not.

An item is decided by one or two questions (:class:`DecidedQuestion`): the decision question (plurality; a tie, or a
winning share below ``min_share``, goes to experts) and a classification question (a label only with more than half
of the votes). A stop needs every such question settled; for ``predictive`` the probability that *all* of them stay
is bounded from below by ``1 − Σ(1 − p_question)`` (Bonferroni), so the stated confidence is never overstated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Literal

import numpy as np
from scipy.special import gammaln

from studio.workflows import MajorityRule, SingleChoice, WorkflowSchema

#: Above this many ways to place the remaining votes, :func:`predictive_probability` samples instead of enumerating.
EXACT_LIMIT = 50_000
#: Draws when sampling; seeded, so a replay and the live queue give the same probability for the same counts.
DRAWS = 20_000
TIE = "tie"

Kind = Literal["plurality", "strict_majority"]


@dataclass(frozen=True)
class DecidedQuestion:
    """One question whose answers decide an item: its id, its labels (the options) and how its votes decide."""

    question: str
    labels: tuple[str, ...]
    #: ``plurality``: the most votes decide, a tie (or a share below ``min_share``) goes to experts;
    #: ``strict_majority``: a label with more than half of the votes, else none.
    kind: Kind = "plurality"
    min_share: float | None = None


@dataclass(frozen=True)
class StopCheck:
    """Whether to stop, and the probability that the decision stays (1.0 for ``curtail``'s certainty)."""

    stop: bool
    probability: float


def outcome(counts: Sequence[int], labels: Sequence[str], question: DecidedQuestion) -> tuple[str, bool]:
    """The decision ``question`` makes on these vote counts (one per label): (label, or ``tie`` / ``none``; whether
    the winning share is below ``min_share``). What stays equal between a stop and the full quota."""
    total = sum(counts)
    if total == 0:
        return (TIE, False)
    top = max(counts)
    leaders = [label for label, count in zip(labels, counts, strict=True) if count == top]
    if question.kind == "strict_majority":
        return (leaders[0] if 2 * top > total else "none", False)
    low = question.min_share is not None and top / total < question.min_share
    return (leaders[0] if len(leaders) == 1 else TIE, low)


def _ordered(counts: Mapping[str, int], question: DecidedQuestion) -> tuple[list[str], list[int]]:
    """Counts over the question's labels (a stored value outside them counts as a label of its own)."""
    labels = list(question.labels) + sorted(set(counts) - set(question.labels))
    return labels, [int(counts.get(label, 0)) for label in labels]


def curtail_settled(counts: Mapping[str, int], *, quota: int, question: DecidedQuestion) -> bool:
    """True when no placement of the ``quota − votes`` votes still to come can change ``question``'s decision.

    Plurality: the leader's lead over the runner-up exceeds the votes to come (so it wins every completion) and,
    with ``min_share``, the leader already holds that share of the *full* quota (so its share is at least that at
    the stop and at the quota). Strict majority: a label already holds more than half of the full quota, or none can
    reach half of it and none holds more than half of the votes so far.
    """
    labels, values = _ordered(counts, question)
    stored = sum(values)
    remaining = max(quota - stored, 0)
    if remaining == 0:
        return True
    ranked = sorted(values, reverse=True) + [0, 0]
    top, second = ranked[0], ranked[1]
    if question.kind == "strict_majority":
        return 2 * top > quota or (2 * (top + remaining) <= quota and 2 * top <= stored)
    if top - second <= remaining:
        return False
    return question.min_share is None or top >= question.min_share * quota


@lru_cache(maxsize=256)
def _compositions(remaining: int, labels: int) -> np.ndarray:
    """Every way to place ``remaining`` votes on ``labels`` labels (stars and bars), one row each (cached: a replay
    asks for the same few shapes again and again; the array is read-only)."""
    bars = np.array(list(combinations(range(remaining + labels - 1), labels - 1)), dtype=np.int64)
    bars = bars.reshape(-1, labels - 1)
    edges = np.hstack([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), remaining + labels - 1)])
    rows = np.diff(edges, axis=1) - 1
    rows.setflags(write=False)
    return rows


def _outcome_codes(finals: np.ndarray, question: DecidedQuestion) -> tuple[np.ndarray, np.ndarray]:
    """:func:`outcome` on each row of ``finals`` (vote counts, every row with votes), as codes: the winning label's
    column, ``-1`` for ``tie`` and ``-2`` for ``none``; and the ``min_share`` flag."""
    total = finals.sum(axis=1)
    top = finals.max(axis=1)
    first = finals.argmax(axis=1)  # the first leader, as outcome() names it
    if question.kind == "strict_majority":
        return np.where(2 * top > total, first, -2), np.zeros(len(finals), dtype=bool)
    leaders = (finals == top[:, None]).sum(axis=1)
    low = np.zeros(len(finals), dtype=bool) if question.min_share is None else top / total < question.min_share
    return np.where(leaders == 1, first, -1), low


def _code(decision: tuple[str, bool], labels: Sequence[str]) -> tuple[int, bool]:
    """A decision of :func:`outcome` as :func:`_outcome_codes` writes it."""
    label, low = decision
    special = {TIE: -1, "none": -2}
    return (special[label] if label in special else list(labels).index(label)), low


def _log_dirichlet_multinomial(draws: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    total = draws.sum(axis=1)
    logs: np.ndarray = (
        gammaln(total + 1)
        - gammaln(draws + 1).sum(axis=1)
        + gammaln(alpha.sum())
        - gammaln(alpha.sum() + total)
        + (gammaln(draws + alpha) - gammaln(alpha)).sum(axis=1)
    )
    return logs


def predictive_probability(
    counts: Mapping[str, int], *, quota: int, question: DecidedQuestion, prior: float = 1.0, seed: int = 0
) -> float:
    """P(decision at the full quota == decision now) under the Dirichlet–multinomial posterior predictive."""
    labels, values = _ordered(counts, question)
    remaining = max(quota - sum(values), 0)
    if remaining == 0:
        return 1.0
    now = outcome(values, labels, question)
    alpha = np.array(values, dtype=float) + prior
    if question.kind == "strict_majority":
        return _strict_majority_probability(values, labels, now=now[0], quota=quota, alpha=alpha)
    if math.comb(remaining + len(labels) - 1, len(labels) - 1) <= EXACT_LIMIT:
        draws = _compositions(remaining, len(labels))
        weights = np.exp(_log_dirichlet_multinomial(draws, alpha))
    else:
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(remaining, rng.dirichlet(alpha, size=DRAWS))
        weights = np.full(len(draws), 1.0 / len(draws))
    codes, lows = _outcome_codes(np.asarray(values) + draws, question)
    now_code, now_low = _code(now, labels)
    same = (codes == now_code) & (lows == now_low)
    return float(min(1.0, weights[same].sum()))


def _strict_majority_probability(
    values: Sequence[int], labels: Sequence[str], *, now: str, quota: int, alpha: np.ndarray
) -> float:
    """Exact P(the strict-majority outcome at the quota == ``now``), however many labels.

    At most one label can hold more than half of the quota, so the outcomes are disjoint events "label L ends above
    half", and each depends on L's count alone: under the Dirichlet–multinomial the votes L still gets are
    beta-binomial(remaining, α_L, Σα − α_L). So P(L) = P(BB_L > quota/2 − count_L), and P(none) = 1 − Σ_L P(L).
    """
    from scipy.stats import betabinom

    remaining = quota - sum(values)
    above = {
        label: float(betabinom.sf(quota // 2 - count, remaining, a, alpha.sum() - a))
        for label, count, a in zip(labels, values, alpha, strict=True)
    }
    probability = above[now] if now in above else 1.0 - sum(above.values())
    return float(min(1.0, max(0.0, probability)))


def check_stop(
    counts: Mapping[str, Mapping[str, int]],
    *,
    quota: int,
    questions: Sequence[DecidedQuestion],
    rule: Literal["curtail", "predictive"],
    confidence: float = 0.99,
    min_votes: int = 5,
) -> StopCheck:
    """Whether an item may stop, given its vote counts per question (``counts[question][label]``).

    ``votes`` is the number of stored votes (the largest count over the questions: an optional question may be left
    empty). Never stops an item with no votes; ``predictive`` never before ``min_votes``.
    """
    votes = max((sum(per_label.values()) for per_label in counts.values()), default=0)
    if votes == 0:
        return StopCheck(stop=False, probability=0.0)
    if rule == "curtail":
        settled = all(curtail_settled(counts.get(q.question, {}), quota=quota, question=q) for q in questions)
        return StopCheck(stop=settled, probability=1.0 if settled else 0.0)
    if votes < min_votes:
        return StopCheck(stop=False, probability=0.0)
    misses = sum(1.0 - predictive_probability(counts.get(q.question, {}), quota=quota, question=q) for q in questions)
    probability = max(0.0, 1.0 - misses)
    return StopCheck(stop=probability >= confidence, probability=probability)


@dataclass(frozen=True)
class Replay:
    """What a stopping rule would have done to a votes file (``h2h stopping-replay``)."""

    items: int
    votes_total: int
    votes_used: int
    identical: int
    changed: list[dict[str, object]]

    def to_dict(self) -> dict[str, object]:
        return {
            "items": self.items,
            "votes_total": self.votes_total,
            "votes_used": self.votes_used,
            "saved_fraction": 1 - self.votes_used / self.votes_total if self.votes_total else 0.0,
            "identical_fraction": self.identical / self.items if self.items else 1.0,
            "changed_items": self.changed,
        }


def replay_item(
    values: Sequence[str],
    *,
    quota: int,
    question: DecidedQuestion,
    rule: Literal["curtail", "predictive"],
    confidence: float = 0.99,
    min_votes: int = 5,
) -> tuple[int, tuple[str, bool], tuple[str, bool]]:
    """One item's votes in the order they came: (votes used, decision at the stop, decision on all its votes)."""
    labels, _ = _ordered(dict.fromkeys(values, 0), question)
    counts: dict[str, int] = {}
    used = len(values)
    for position, value in enumerate(values, start=1):
        counts[value] = counts.get(value, 0) + 1
        check = check_stop(
            {question.question: counts},
            quota=quota,
            questions=[question],
            rule=rule,
            confidence=confidence,
            min_votes=min_votes,
        )
        if check.stop:
            used = position
            break

    def decided(votes: Sequence[str]) -> tuple[str, bool]:
        return outcome([list(votes).count(label) for label in labels], labels, question)

    return used, decided(values[:used]), decided(values)


def replay(
    votes: Mapping[str, Sequence[str]],
    *,
    quota: int,
    question: DecidedQuestion,
    rule: Literal["curtail", "predictive"],
    confidence: float = 0.99,
    min_votes: int = 5,
) -> Replay:
    """Every item's votes (``votes[item]``, in the order they came) through :func:`replay_item`: how many votes the
    rule would have used and the items whose decision at the stop differs from the decision on all their votes."""
    used = identical = 0
    changed: list[dict[str, object]] = []
    for item, values in votes.items():
        at, at_stop, full = replay_item(
            values, quota=quota, question=question, rule=rule, confidence=confidence, min_votes=min_votes
        )
        used += at
        if at_stop == full:
            identical += 1
        else:
            changed.append({"item": item, "votes_at_stop": at, "at_stop": _shown(at_stop), "full": _shown(full)})
    total = sum(len(values) for values in votes.values())
    return Replay(items=len(votes), votes_total=total, votes_used=used, identical=identical, changed=changed)


def _shown(decision: tuple[str, bool]) -> str:
    """A decision as a replay prints it: the label, marked when its share is below the question's ``min_share``."""
    label, low = decision
    return f"{label} (share below min_share)" if low else label


def decided_questions(schema: WorkflowSchema) -> list[DecidedQuestion]:
    """The questions whose decisions a stop must preserve: the decision question (plurality, with the rule's
    ``min_agreement``) and the classification question (strict majority), where the workflow has them."""
    rule, decision = schema.aggregation, schema.decision_question
    if not isinstance(rule, MajorityRule) or decision is None:
        return []
    found = [DecidedQuestion(decision.id, tuple(decision.option_values()), "plurality", rule.min_agreement or None)]
    if rule.classification:
        label = schema.questions_by_id[rule.classification.question]
        options = tuple(label.option_values()) if isinstance(label, SingleChoice) else ()
        found.append(DecidedQuestion(label.id, options, "strict_majority"))
    return found
