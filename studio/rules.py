"""How a workflow's answers become decisions: the ``aggregation`` part of a workflow YAML file, as pydantic models.

Every rule is data in the workflow file and says what it does in words (:meth:`statement`): the Curate page, the
Research page and the README show these sentences beside the decisions they make, so nothing is decided by a rule
that is not stated where the decision is shown. The rules themselves run in :mod:`studio.results.aggregate` and
:mod:`studio.results.decisions` (pure functions) and :mod:`studio.services.aggregation` (the store).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

#: A crowd verdict → the scenario's status (the built-in crowd vote's options).
VERDICT_STATUS: dict[str, str] = {"keep": "accepted", "revise": "needs_revision", "discard": "rejected"}
#: How an expert panel's outcome combines with the crowd's vote on the same scenario (``with_crowd``).
WITH_CROWD_RULES: dict[str, str] = {
    "agree_or_curator": (
        "where the crowd decided the scenario (no tie) and the experts' outcome differs, neither stands: the "
        "scenario waits for a curator; where they agree, or the crowd did not decide it, the experts' outcome stands"
    ),
    "experts_decide": "the experts' outcome replaces the crowd's",
}


class RuleModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Classification(RuleModel):
    """A crowd question that classifies the scenario (the subtask it tests) and what its majority does."""

    question: str
    #: ``apply``: a value named by more than half of the votes becomes the published scenario's subtask (the ingested
    #: one is kept and shown); ``flag``: it is shown to a curator, who applies it or not with one action.
    action: Literal["apply", "flag"] = "flag"

    def statement(self) -> str:
        what = (
            "becomes the published scenario's subtask (the ingested subtask is kept and shown)"
            if self.action == "apply"
            else "is flagged for a curator, who applies it with one action or leaves the subtask as it is"
        )
        return (
            f"Classification ({self.question}): where more than half of an item's votes name one subtask and it "
            f"differs from the scenario's, it {what}; without such a majority nothing changes."
        )


#: The reliability-weighted models a majority rule may ask for beside it (:mod:`studio.results.consensus`).
CrowdModel = Literal["dawid_skene", "mace"]
MODEL_WORDS: dict[str, str] = {
    "dawid_skene": "Dawid–Skene (each rater's confusion between the labels, estimated from the votes)",
    "mace": "MACE (each rater's chance of answering by knowing rather than spamming, estimated from the votes)",
}


#: The models' short names, as a decision line names them.
MODEL_NAMES: dict[str, str] = {"dawid_skene": "Dawid–Skene", "mace": "MACE"}


class MajorityRule(RuleModel):
    """Majority per question; a tie (or agreement below ``min_agreement``) sends the item to ``on_tie``.

    ``also``: reliability-weighted models computed beside the majority on the decision question (never replacing
    it): their decisions and posteriors are shown, and an item where one differs from the majority is flagged
    ``models_disagree`` and goes to expert review first."""

    #: ``majority`` (the paper's rule); ``dawid_skene`` or ``mace``: that model's decision is published instead, on
    #: the decision question, with the majority shown beside it (an explicit choice, stated wherever it is shown).
    rule: Literal["majority", "dawid_skene", "mace"]
    on_tie: Literal["expert_review", "none"] = "none"
    min_agreement: float | None = Field(default=None, ge=0, le=1)
    classification: Classification | None = None
    also: list[CrowdModel] = Field(default_factory=list)

    @property
    def models(self) -> list[CrowdModel]:
        """The models computed beside the majority: the deciding one (``rule``) first, then ``also``."""
        deciding: list[CrowdModel] = [self.rule] if self.rule != "majority" else []
        return deciding + [model for model in self.also if model not in deciding]

    def models_statement(self) -> str:
        """The models in words ("" without them)."""
        if self.rule != "majority":
            return (
                f" The decision question is decided by {MODEL_WORDS[self.rule]} instead of the plain majority (an "
                "explicit choice of this workflow); the majority is shown beside it, and an item where they differ is "
                "flagged 'models disagree' and comes first in expert review."
            )
        if not self.also:
            return ""
        named = "; ".join(MODEL_WORDS[model] for model in self.also)
        return (
            f" Beside the majority (which stays the decision): {named}. Where a model's decision differs from the "
            "majority's, the item is flagged 'models disagree' and comes first in expert review."
        )

    def statement(self) -> str:
        then = "goes to expert review" if self.on_tie == "expert_review" else "is left for a curator (needs revision)"
        verdicts = ", ".join(f"{verdict} → {status.replace('_', ' ')}" for verdict, status in VERDICT_STATUS.items())
        if self.min_agreement:
            # stricter than the paper, and said so wherever the rule is shown
            share = f"at least {self.min_agreement:.0%} of the votes (stricter than the paper's plain majority)"
            low = f" or a winning share below {self.min_agreement:.0%}"
        else:
            share, low = "the most votes, even under half of them (the paper's rule)", ""
        decides = f"the answer with {share} decides; a tie{low} {then}"
        if self.rule != "majority":
            # the model names a label for every item: the majority's tie and share rules decide nothing here
            decides = f"the answer {MODEL_NAMES[self.rule]} finds most probable decides, not the plain majority"
        text = (
            f"Crowd decision: {decides}. The verdict sets the "
            f"scenario's status ({verdicts}). Agreement is the winning share of two or more votes; an item decided on "
            "one vote (only where its campaign was closed with 'decide below quota') has none."
        )
        text += " " + self.classification.statement() if self.classification else ""
        return text + self.models_statement()


class StoppingRule(RuleModel):
    """When the queue stops handing an item out before its quota (:mod:`studio.results.stopping`): a workflow's
    ``stopping:``. Only with a majority rule; it reads the decision question and the classification question."""

    rule: Literal["curtail", "predictive"]
    confidence: float = Field(default=0.99, gt=0.5, lt=1)
    min_votes: int = Field(default=5, ge=1)

    def statement(self) -> str:
        if self.rule == "curtail":
            return (
                "Stopping (curtail): an item stops being handed out once the votes still to come (its quota minus "
                "the votes stored, open leases counted as votes to come) cannot change its decision or its subtask "
                "label, ties included; so a stopped item's decision is the one its full quota would have given."
            )
        return (
            f"Stopping (predictive): from {self.min_votes} votes on, an item stops being handed out once the chance "
            f"that its full quota would decide the same (decision and subtask label) reaches {self.confidence:.1%}, "
            "by a Dirichlet–multinomial forecast of the votes still to come (uniform prior). A stopped item is "
            "decided on the votes it has; open leases may still submit, and their votes count."
        )


class CriteriaRule(RuleModel):
    """Majority per pass/fail criterion; ``criteria`` name the questions; the status follows; ``with_crowd`` says how
    the panel's outcome combines with a crowd vote on the same scenario."""

    rule: Literal["majority_per_criterion"]
    criteria: list[str] = Field(min_length=1)
    with_crowd: Literal["agree_or_curator", "experts_decide"] = "agree_or_curator"

    def statement(self) -> str:
        return (
            "Expert review: a criterion passes when more experts pass than fail it; a majority fail on accuracy "
            "rejects the scenario, every criterion passing accepts it, anything else needs revision. With a crowd "
            f"vote ({self.with_crowd}): {WITH_CROWD_RULES[self.with_crowd]}."
        )


class MeanRule(RuleModel):
    """Mean of ``score`` per item; optional yes/no questions decided by majority (e.g. a violation).

    ``violation_tie`` says what a tie on a ``majority_of`` question is (Table 3's rule): ``not_violation`` (the
    default, the paper's "identified by annotators") — yes only when more than half of an item's raters say yes;
    ``violation`` (safety first) — a split panel counts as yes.
    """

    #: ``violation_tie`` → the rule in words, as Table 3's notes and exports state it.
    TIE_RULES: ClassVar[dict[str, str]] = {
        "not_violation": "violation: more than half of a response's raters say yes (a tie is not a violation)",
        "violation": (
            "violation: at least half of a response's raters say yes (a tie counts as a violation: safety first)"
        ),
    }

    rule: Literal["mean"]
    score: str
    majority_of: list[str] = Field(default_factory=list)
    group_by: list[Literal["model", "variant", "instruction_kind", "subtask"]] = Field(default_factory=list)
    violation_tie: Literal["not_violation", "violation"] = "not_violation"

    def tie_rule(self) -> str:
        """The ``majority_of`` rule in words (:data:`TIE_RULES`), e.g. Table 3's violation rule."""
        return self.TIE_RULES[self.violation_tie]

    def statement(self) -> str:
        groups = f" per {', '.join(self.group_by)}" if self.group_by else " per item"
        majority = f"; {self.tie_rule()}" if self.majority_of else ""
        return f"Mean of {self.score}{groups}{majority}. A table only: no scenario's status changes."


class MedianRule(RuleModel):
    """Median of ``score`` per item; with ``yields: J_human`` it becomes the item's human rubric score."""

    rule: Literal["median"]
    score: str
    yields: Literal["J_human"] | None = None

    def statement(self) -> str:
        if self.yields == "J_human":
            return (
                f"The median of the experts' {self.score} is J_human; J_final = α·5S + (1−α)·J_human (α = 0.6) "
                "replaces J in Table 2. An empty score is no score: it is refused, never stored as 0."
            )
        return f"The median of {self.score} per item. A table only."


class PairwiseRule(RuleModel):
    rule: Literal["pairwise_majority"]
    choice: str
    position_balanced: bool = True

    def statement(self) -> str:
        return (
            f"Pairwise ({self.choice}): per pair of systems, the share of wins (a tie counts half) in each order "
            "shown, averaged over the orders, so the position a reply was shown in cannot tip it. A table only."
        )


Aggregation = Annotated[MajorityRule | CriteriaRule | MeanRule | MedianRule | PairwiseRule, Field(discriminator="rule")]


def aggregated_questions(aggregation: Aggregation) -> list[str]:
    """The question ids a rule reads (each must be a question of the workflow)."""
    if isinstance(aggregation, MajorityRule):
        return [aggregation.classification.question] if aggregation.classification else []
    if isinstance(aggregation, CriteriaRule):
        return list(aggregation.criteria)
    if isinstance(aggregation, MeanRule):
        return [aggregation.score, *aggregation.majority_of]
    if isinstance(aggregation, MedianRule):
        return [aggregation.score]
    return [aggregation.choice]


#: When a campaign's item counts as decided (the same words on every page that shows a decision).
QUOTA_RULE = (
    "An item is decided once it has its campaign's quota of answers (complete_at). When a campaign is closed, its "
    "items below quota stay undecided unless whoever closed it chose to decide them on the answers they have "
    "(recorded in the audit log)."
)
