"""Annotation workflows as data: the top-level ``annotation_schemas/*.yaml`` (package data) parsed into pydantic models.

A workflow schema names what is annotated (``target``), by whom (``eligible_roles``), by how many
people (``people_per_item``), what is asked (``questions``: a discriminated union on ``type``) and how
answers aggregate (``aggregation``: a discriminated union on ``rule``, in :mod:`studio.rules`). A new workflow is a
new YAML file; no UI or service code names a workflow.
"""

from __future__ import annotations

import math
import re
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from studio.policies import Role
from studio.rules import (
    Aggregation,
    CriteriaRule,
    MajorityRule,
    MeanRule,
    MedianRule,
    PairwiseRule,
    StoppingRule,
    aggregated_questions,
)
from studio.workflow_live import LiveSpec

__all__ = [  # the rules live in studio.rules; re-exported here for the code that reads them with the workflow
    "Aggregation",
    "CriteriaRule",
    "MajorityRule",
    "MeanRule",
    "MedianRule",
    "PairwiseRule",
    "StoppingRule",
]

TargetKind = Literal["scenario", "response", "response_pair", "live_session"]
Level = Literal["nominal", "ordinal", "interval"]
#: Content an annotator may be shown beyond persona, history, user input and the response(s).
RevealField = Literal["reference", "subtask", "tags", "auto_scores", "judge_score", "model", "variant"]

IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
DEFAULT_TEXT_LIMIT = 4000


def default_schemas_dir() -> Path:
    """Return the bundled workflows: the top-level ``annotation_schemas/`` folder, shipped inside the wheel as the
    package ``studio.annotation_schemas`` (a checkout, an editable install and a wheel all have it)."""
    return Path(str(resources.files("studio.annotation_schemas")))


class AnswerValidationError(ValueError):
    """An answer that the schema does not allow; names the question and the problem."""

    def __init__(self, question_id: str, problem: str) -> None:
        self.question_id, self.problem = question_id, problem
        super().__init__(f"{question_id}: {problem}")


class SchemaModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Option(SchemaModel):
    value: str
    label: str | None = None
    shortcut: str | None = Field(default=None, max_length=1)

    @property
    def display(self) -> str:
        return self.label or self.value


def _coerce_options(raw: Any) -> Any:
    """Allow ``options: [keep, revise]`` as shorthand for ``[{value: keep}, {value: revise}]``."""
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, bool):
                raise ValueError(f'option {item} is a YAML boolean: quote it, e.g. "yes" / "no"')
        return [{"value": str(item)} if not isinstance(item, dict) else item for item in raw]
    return raw


class QuestionBase(SchemaModel):
    id: str
    prompt: str
    help: str | None = None
    required: bool = True
    #: Ask this question only when another answer has one of these values, e.g. {violation: [yes]}.
    when: dict[str, list[str]] | None = None

    @field_validator("id")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError("must be lower_snake_case: a letter, then letters, digits or _")
        return value

    def public(self) -> dict[str, Any]:
        """The question as clients see it (``id``, ``type``, ``prompt`` and its range or options)."""
        return self.model_dump(exclude_none=True)

    def check(self, value: Any) -> Any:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


class ChoiceQuestion(QuestionBase):
    options: list[Option] = Field(min_length=2)
    level: Level = "nominal"

    _shorthand = field_validator("options", mode="before")(_coerce_options)

    @field_validator("options")
    @classmethod
    def _unique_values(cls, options: list[Option]) -> list[Option]:
        values = [option.value for option in options]
        if len(set(values)) != len(values):
            raise ValueError("option values must be unique")
        return options

    def option_values(self) -> list[str]:
        return [option.value for option in self.options]

    def public(self) -> dict[str, Any]:
        data = super().public()
        data["options"] = [option.model_dump(exclude_none=True) for option in self.options]
        return data


class SingleChoice(ChoiceQuestion):
    type: Literal["single_choice"]

    def check(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.option_values():
            raise AnswerValidationError(self.id, f"{value!r} is not one of {self.option_values()}")
        return value


class MultipleChoice(ChoiceQuestion):
    type: Literal["multiple_choice"]
    min_selected: int = 0
    max_selected: int | None = None

    def check(self, value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise AnswerValidationError(self.id, "expected a list of option values")
        unknown = [item for item in value if item not in self.option_values()]
        if unknown:
            raise AnswerValidationError(self.id, f"{unknown} not among {self.option_values()}")
        if len(set(value)) != len(value):
            raise AnswerValidationError(self.id, "an option is chosen twice")
        upper = self.max_selected if self.max_selected is not None else len(self.options)
        if not self.min_selected <= len(value) <= upper:
            raise AnswerValidationError(self.id, f"choose between {self.min_selected} and {upper} options")
        return sorted(value, key=self.option_values().index)


class RangeQuestion(QuestionBase):
    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> RangeQuestion:
        if self.min >= self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        return self

    def _number(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise AnswerValidationError(self.id, f"expected a number, got {value!r}")
        if not self.min <= value <= self.max:
            raise AnswerValidationError(self.id, f"{value} is outside {self.min:g}..{self.max:g}")
        return value


class Rating(RangeQuestion):
    """A Likert-style rating on the whole numbers min..max."""

    type: Literal["rating"]
    level: Level = "ordinal"
    labels: dict[int, str] | None = None

    def check(self, value: Any) -> int:
        number = self._number(value)
        if number != int(number):
            raise AnswerValidationError(self.id, f"{value} is not a whole number")
        return int(number)


class NumberRange(RangeQuestion):
    type: Literal["number"]
    level: Level = "interval"
    step: float | None = None

    def check(self, value: Any) -> float:
        number = float(self._number(value))
        if self.step and not math.isclose((number - self.min) / self.step, round((number - self.min) / self.step)):
            raise AnswerValidationError(self.id, f"{value} is not a multiple of {self.step:g} from {self.min:g}")
        return number


class FreeText(QuestionBase):
    type: Literal["free_text"]
    required: bool = False
    max_length: int = Field(default=DEFAULT_TEXT_LIMIT, ge=1, le=100_000)

    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            raise AnswerValidationError(self.id, "expected text")
        if len(value) > self.max_length:
            raise AnswerValidationError(self.id, f"text is {len(value)} characters; the limit is {self.max_length}")
        if self.required and not value.strip():
            raise AnswerValidationError(self.id, "must not be empty")
        return value


class Pairwise(QuestionBase):
    """Which of two responses (shown as A and B, order randomised per person) is better."""

    type: Literal["pairwise"]
    allow_tie: bool = True
    level: Level = "nominal"

    def choices(self) -> list[str]:
        return ["A", "B", "tie"] if self.allow_tie else ["A", "B"]

    def public(self) -> dict[str, Any]:
        data = super().public()
        data["options"] = [{"value": choice} for choice in self.choices()]
        return data

    def check(self, value: Any) -> str:
        if value not in self.choices():
            raise AnswerValidationError(self.id, f"{value!r} is not one of {self.choices()}")
        return str(value)


Question = Annotated[
    SingleChoice | MultipleChoice | Rating | NumberRange | FreeText | Pairwise, Field(discriminator="type")
]


class TargetFilter(SchemaModel):
    """Which targets a campaign of this workflow takes by default."""

    high_risk: bool | None = None
    flagged_for_adjudication: bool | None = None
    has_instruction_kind: bool | None = None
    subtasks: list[str] | None = None


class AuditSpec(SchemaModel):
    """A seeded random audit sample of an adjudication campaign: ``share`` of the judged responses (or ``items`` of
    them), drawn uniformly by ``numpy.random.default_rng(seed)`` from every judged response the selection takes,
    flagged or not (``studio.services.targets.audit_draw``); the labelled set of ``studio.results.ppi``."""

    share: float | None = Field(default=None, gt=0, le=1)
    items: int | None = Field(default=None, ge=1)
    seed: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _one_size(self) -> AuditSpec:
        if (self.share is None) == (self.items is None):
            raise ValueError("audit: give exactly one of share (0 < share <= 1) or items (>= 1)")
        return self

    def size(self, population: int) -> int:
        """How many of ``population`` judged responses the audit draws (a share rounds up; never more than all)."""
        wanted = self.items if self.items is not None else math.ceil((self.share or 0) * population)
        return min(population, wanted)


class WorkflowSchema(SchemaModel):
    """One annotation workflow (one YAML file)."""

    name: str
    type: str  # the workflow family results code keys on, e.g. crowd_vote; a new family needs no code
    title: str
    instructions: str = ""
    #: What to look for, with worked examples (Markdown, shown in a "Guidelines and examples" panel of the form).
    guidelines: str = ""
    target: TargetKind
    target_filter: TargetFilter = Field(default_factory=TargetFilter)
    people_per_item: int = Field(ge=1, le=1000)
    min_people_per_item: int = Field(default=1, ge=1)
    eligible_roles: list[Role] = Field(min_length=1)
    reveal: list[RevealField] = Field(default_factory=list)
    allow_revision: bool = True
    questions: list[Question] = Field(min_length=1)
    aggregation: Aggregation
    #: Stop handing an item out once its decision is settled (``studio.rules.StoppingRule``); None: every quota.
    stopping: StoppingRule | None = None
    #: How a ``live_session`` conversation runs (``studio.workflow_live``); required for that target, else refused.
    live: LiveSpec | None = None
    #: A seeded random audit sample beside the flagged items (target ``response``, type ``adjudication`` only).
    audit: AuditSpec | None = None

    @field_validator("name", "type")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError("must be lower_snake_case")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkflowSchema:
        ids = [question.id for question in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"question ids must be unique: {ids}")
        if self.people_per_item < self.min_people_per_item:
            raise ValueError(f"people_per_item must be at least min_people_per_item ({self.min_people_per_item})")
        for question in self.questions:
            for other in question.when or {}:
                if other not in ids or other == question.id:
                    raise ValueError(f"question {question.id}: 'when' names unknown question {other!r}")
        missing = [name for name in aggregated_questions(self.aggregation) if name not in ids]
        if missing:
            raise ValueError(f"aggregation names unknown questions {missing}")
        classification = getattr(self.aggregation, "classification", None)
        if classification and not isinstance(self.questions_by_id[classification.question], SingleChoice):
            raise ValueError(f"aggregation.classification: {classification.question} must be a single_choice question")
        if (self.target == "response_pair") != any(isinstance(q, Pairwise) for q in self.questions):
            raise ValueError("pairwise questions go with target response_pair, and only with it")
        self._check_crowd_models()
        self._check_live()
        if self.audit is not None and (self.target, self.type) != ("response", "adjudication"):
            raise ValueError("audit: an audit sample goes with an adjudication workflow (target response) only")
        return self

    def _check_live(self) -> None:
        """A ``live:`` section goes with target ``live_session`` only; its ``turn_marks`` question offers the reply
        numbers "1", "2", ... (at least max_turns of them) and is optional (no mark: no harmful reply)."""
        if (self.target == "live_session") != (self.live is not None):
            raise ValueError("live: a 'live:' section goes with target live_session, and only with it")
        if self.live is None or self.live.turn_marks is None:
            return
        marks = self.questions_by_id.get(self.live.turn_marks)
        values = [option.value for option in marks.options] if isinstance(marks, MultipleChoice) else []
        numbered = values == [str(number) for number in range(1, len(values) + 1)]
        if not isinstance(marks, MultipleChoice) or not numbered or len(values) < self.live.max_turns:
            raise ValueError(
                f"live.turn_marks: {self.live.turn_marks} must be a multiple_choice with options "
                f'"1".."{self.live.max_turns}" (at least max_turns: one per reply)'
            )
        if marks.required:
            raise ValueError(f"live.turn_marks: {self.live.turn_marks} must have required: false")

    def _check_crowd_models(self) -> None:
        """Stopping and reliability models need a majority rule with a nominal (single-choice) decision question."""
        rule = self.aggregation
        wants_models = isinstance(rule, MajorityRule) and bool(rule.models)
        if (self.stopping or wants_models) and self.decision_question is None:
            what = "stopping" if self.stopping else f"aggregation.rule/also ({', '.join(rule.models)})"  # type: ignore[union-attr]
            raise ValueError(
                f"{what}: needs rule majority (or dawid_skene / mace) and a single_choice decision question; "
                "these work on nominal questions only"
            )

    @property
    def decision_question(self) -> SingleChoice | None:
        """The question a majority rule decides an item by: the first single-choice question that is not the
        classification question (None for other rules)."""
        rule = self.aggregation
        if not isinstance(rule, MajorityRule):
            return None
        label = rule.classification.question if rule.classification else None
        choices = [q for q in self.questions if isinstance(q, SingleChoice) and q.id != label]
        return choices[0] if choices else None

    @cached_property
    def questions_by_id(self) -> dict[str, Question]:
        return {question.id: question for question in self.questions}

    def public_questions(self) -> list[dict[str, Any]]:
        """The form as clients see it: each question's id, type, prompt and options or min/max."""
        return [question.public() for question in self.questions]

    def validate_answers(self, answers: dict[str, Any]) -> dict[str, Any]:
        """Return the answers normalised, or raise :class:`AnswerValidationError` naming the question.

        Unknown questions, missing required answers, values outside the options or range, over-long
        text and answers to questions whose ``when`` condition does not hold are all refused.
        """
        if not isinstance(answers, dict):
            raise AnswerValidationError("answers", "expected an object of question id → value")
        unknown = sorted(set(answers) - set(self.questions_by_id))
        if unknown:
            raise AnswerValidationError(unknown[0], "unknown question")
        clean: dict[str, Any] = {}
        for question in self.questions:
            value = answers.get(question.id)
            asked = all(str(clean.get(other)) in values for other, values in (question.when or {}).items())
            if value is None or value == "" or value == []:
                if asked and question.required:
                    raise AnswerValidationError(question.id, "an answer is required")
                continue
            if not asked:
                raise AnswerValidationError(question.id, f"not asked unless {question.when}")
            clean[question.id] = question.check(value)
        return clean


class SchemaFileError(ValueError):
    """A problem in a schema file: ``file:line: field: problem``."""


def _line_of(node: yaml.Node | None, location: tuple[Any, ...]) -> int | None:
    """Follow a pydantic error location through the YAML node tree; return the 1-based line found."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in location:
        if isinstance(node, yaml.MappingNode):
            node = next((value for key, value in node.value if key.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            continue  # a discriminator tag such as 'single_choice' in the location: stay on this node
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def parse_schema_file(path: Path | str) -> WorkflowSchema:
    """Parse one YAML workflow; raise :class:`SchemaFileError` listing every problem as file:line: field."""
    problems = check_schema_file(path)
    if problems:
        raise SchemaFileError("\n".join(problems))
    return WorkflowSchema.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


def check_schema_file(path: Path | str) -> list[str]:
    """Return every problem of one YAML workflow as ``file:line: field: problem`` (empty when valid)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data, root = yaml.safe_load(text), yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [f"{path}:{mark.line + 1 if mark else '?'}: (yaml): {getattr(exc, 'problem', exc)}"]
    if not isinstance(data, dict):
        return [f"{path}:1: (file): expected a mapping of workflow fields"]
    try:
        schema = WorkflowSchema.model_validate(data)
    except ValidationError as exc:
        return [
            f"{path}:{_line_of(root, tuple(error['loc'])) or '?'}: "
            f"{'.'.join(str(part) for part in error['loc']) or '(file)'}: {error['msg']}"
            for error in exc.errors()
        ]
    if schema.name != Path(path).stem:
        line = _line_of(root, ("name",))
        return [f"{path}:{line}: name: {schema.name!r} must equal the file name {Path(path).stem!r}"]
    return []


def load_schemas(directory: Path | str | None = None) -> dict[str, WorkflowSchema]:
    """Load every ``*.yaml`` workflow of ``directory`` (default: the bundled folder), by name."""
    folder = Path(directory) if directory is not None else default_schemas_dir()
    schemas = {}
    for path in sorted(folder.glob("*.y*ml")):
        schema = parse_schema_file(path)
        schemas[schema.name] = schema
    return schemas
