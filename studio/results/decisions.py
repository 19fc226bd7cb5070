"""How a scenario's status follows from the crowd's vote and the experts' review, by the rules the workflows state
(:mod:`studio.rules`): pure functions, one definition for aggregation, the Curate page and the exports.

A scenario's status is never set by whoever aggregated last: each side is stored as its rule counted it
(:class:`CrowdSide`, :class:`ExpertSide`, on ``ScenarioStatus.crowd`` / ``.experts``) and :func:`decide` derives the
status from both, with the decision in words (``rule_note``), e.g. ``crowd: revise 3/3 · experts: pass 3/3 → waits
for a curator (agree_or_curator: …)``. A curator's decision outranks both (``studio.services.scenario_status``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from studio.rules import VERDICT_STATUS, WITH_CROWD_RULES

#: A scenario the crowd and the experts decided differently under ``agree_or_curator``: a curator decides.
NEEDS_CURATOR = "needs_curator"


@dataclass(frozen=True)
class CrowdSide:
    """The crowd's vote on one scenario as the majority rule counted it."""

    campaign: str
    question: str
    counts: dict[str, int]
    decision: str | None  # None: a tie
    disputed: bool  # a tie, or a winning share below the rule's min_agreement
    to_experts: bool  # the rule sends disputed items to expert review
    label_question: str | None = None
    label_counts: dict[str, int] = field(default_factory=dict)
    #: What decided ``decision``: ``majority`` (the paper's rule) or the model the workflow chose instead
    #: (``dawid_skene`` / ``mace``; the majority is then shown beside it, from ``counts``).
    rule: str = "majority"
    #: The reliability-weighted models computed on the decision question: name → {decision, posterior}.
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A model's decision differs from the majority's (a majority tie differs from any model): expert review first.
    models_disagree: bool = False

    @property
    def votes(self) -> int:
        return sum(self.counts.values())

    @property
    def majority(self) -> str | None:
        """The most common value of ``counts`` (None on a tie or without votes), whatever rule decided."""
        if not self.counts:
            return None
        top = max(self.counts.values())
        leaders = [value for value, count in self.counts.items() if count == top]
        return leaders[0] if len(leaders) == 1 else None

    def status(self) -> str:
        """The status the crowd's vote alone gives."""
        if self.disputed:
            return "in_review" if self.to_experts else "needs_revision"
        return VERDICT_STATUS.get(self.decision or "", "pending")

    def words(self) -> str:
        """``crowd: revise 3/3``; a tie or a low share says so (``crowd: keep 2 · revise 2 of 4, a tie``); with
        models that disagree with the majority, each one's decision and posterior follow
        (``… · dawid_skene: keep (0.97) · models disagree``), and
        under a model's rule the model speaks first (``crowd by dawid_skene: keep (0.97), majority revise 11/20``)."""
        return self._majority_words() + self._model_words()

    def _majority_words(self) -> str:
        if self.rule != "majority":
            posterior = self.models.get(self.rule, {}).get("posterior")
            shown = f" ({posterior:.2f})" if isinstance(posterior, float) else ""
            majority = self.majority
            beside = f"{majority} {self.counts.get(majority, 0)}/{self.votes}" if majority else "a tie"
            return f"crowd by {self.rule}: {self.decision}{shown}, majority {beside}"
        if self.decision is not None and not self.disputed:
            return f"crowd: {self.decision} {self.counts.get(self.decision, 0)}/{self.votes}"
        tally = " · ".join(f"{value} {count}" for value, count in sorted(self.counts.items(), key=lambda kv: -kv[1]))
        why = "a tie" if self.decision is None else "too little agreement"
        return f"crowd: {tally} of {self.votes}, {why}"

    def _model_words(self) -> str:
        """Where the models disagree with the majority, what each said (an agreement adds nothing to the note)."""
        if not self.models_disagree:
            return ""
        beside = [
            f"{name}: {model['decision']} ({float(model['posterior']):.2f})"
            for name, model in self.models.items()
            if name != self.rule
        ]
        return "".join(f" · {part}" for part in beside) + " · models disagree"

    def to_store(self) -> dict[str, Any]:
        """The side as stored (JSON): its fields as they are; no deep copy (``asdict``'s recursion took 2.5 s of the
        write lock for the paper's 4,650 scenarios), the nested counts are plain dicts of this side's own."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


@dataclass(frozen=True)
class ExpertSide:
    """An expert panel's review of one scenario: its own outcome, the verdict per criterion, how many experts."""

    campaign: str
    status: str
    reviewers: int
    verdicts: dict[str, str]
    with_crowd: str = "agree_or_curator"

    def words(self) -> str:
        """``experts: accuracy pass, consistency pass, domain_compliance pass (3) → accepted``."""
        verdicts = ", ".join(f"{criterion} {verdict}" for criterion, verdict in self.verdicts.items())
        return f"experts: {verdicts} ({self.reviewers}) → {self.status.replace('_', ' ')}"

    def to_store(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Decision:
    """A scenario's status as the rules give it: who decided (``crowd:<campaign>``, ``expert:<campaign>``; empty when
    nobody could), whether someone has to look, and the decision in words."""

    status: str
    decided_by: str
    disagreement: bool
    note: str


def crowd_side(stored: Mapping[str, Any] | None) -> CrowdSide | None:
    return CrowdSide(**stored) if stored else None


def expert_side(stored: Mapping[str, Any] | None) -> ExpertSide | None:
    return ExpertSide(**stored) if stored else None


def decide(crowd: CrowdSide | None, experts: ExpertSide | None) -> Decision | None:
    """The status the two sides give by the experts' ``with_crowd`` rule (None when neither side has spoken)."""
    if experts is None:
        if crowd is None:
            return None
        status = crowd.status()
        # someone has to look where the crowd did not decide, and where a model contradicts its decision (the
        # Curate page's "Disagreement" filter lists both until the experts have spoken)
        look = crowd.disputed or crowd.models_disagree
        return Decision(status, f"crowd:{crowd.campaign}", look, f"{crowd.words()} → {_said(status)}")
    by_experts = f"expert:{experts.campaign}"
    if crowd is None:
        return Decision(experts.status, by_experts, False, experts.words())
    both = f"{crowd.words()} · {experts.words()}"
    if experts.with_crowd == "experts_decide":
        return Decision(experts.status, by_experts, False, f"{both} ({_rule('experts_decide')})")
    if crowd.disputed or crowd.decision is None:
        return Decision(experts.status, by_experts, False, f"{both} (agree_or_curator: the crowd did not decide)")
    if crowd.status() == experts.status:
        return Decision(experts.status, by_experts, False, f"{both} (agree_or_curator: crowd and experts agree)")
    note = f"{both} → waits for a curator ({_rule('agree_or_curator')})"
    return Decision(NEEDS_CURATOR, "", True, note)


def _said(status: str) -> str:
    return {"in_review": "expert review"}.get(status, status.replace("_", " "))


def _rule(name: str) -> str:
    return f"{name}: {WITH_CROWD_RULES[name]}"


def agreement(*, votes: int, top_share: float) -> float | None:
    """The crowd's agreement on an item: the winning share of its votes, undefined (None) for fewer than two votes
    (one vote agrees with nobody; 1.0 would claim a consensus that was never measured)."""
    return round(float(top_share), 6) if votes >= 2 else None


def strict_majority(counts: Mapping[str, int]) -> str | None:
    """The value named by more than half of the votes, else None (a plurality is not enough to relabel)."""
    total = sum(counts.values())
    for value, count in counts.items():
        if 2 * count > total:
            return value
    return None


def label_action(*, label: str | None, current: str, action: str) -> str | None:
    """What the classification rule does with the crowd's ``label`` for a scenario of subtask ``current``:
    ``applied`` / ``flagged`` (by ``action``) where the label differs, None where there is none or it agrees."""
    if label is None or label == current:
        return None
    return "applied" if action == "apply" else "flagged"
