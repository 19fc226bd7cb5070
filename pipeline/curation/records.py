"""The records the dataset-building stages write, one JSON object per line (``h2h validate`` checks each kind).

| file (written by)                         | record                  |
|-------------------------------------------|-------------------------|
| ``provenance.jsonl`` (simulate)           | :class:`Provenance`     |
| ``duplicates.jsonl`` (simulate)           | :class:`RemovedDuplicate` |
| ``REPORT.jsonl`` (preprocess)             | :class:`ScenarioReport` |
| prescreen output                          | :class:`PrescreenVerdict` |
| judge-pairs input / output                | :class:`PairInput` / :class:`PairJudgment` |
| ``queue.jsonl`` (prescreen, judge-pairs, refine) | :class:`QueueItem` |

Every flag carries ``kind``, ``field`` (a dotted path into the scenario such as ``history.0.content``, or None
for the whole scenario), ``span`` (``[start, end)`` character offsets in that field's *original* text, or None),
``source`` (what found it) and ``reason`` (why, in words), so a curator page can show each one without guessing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from pipeline.records import Record, Subtask

FlagKind = Literal["pii", "sensitive", "meta_text", "broken_roleplay", "template_reference", "duplicate"]
FLAG_KINDS: tuple[FlagKind, ...] = (
    "pii",
    "sensitive",
    "meta_text",
    "broken_roleplay",
    "template_reference",
    "duplicate",
)
PiiEntity = Literal["PHONE", "EMAIL", "ID_CARD", "BANK_CARD", "NAME", "ADDRESS", "URL", "IP"]
PiiAction = Literal["replaced", "review", "kept"]
ScreenVerdict = Literal["keep", "revise", "discard"]
SCREEN_VERDICTS: tuple[ScreenVerdict, ...] = ("keep", "revise", "discard")
PairVerdict = Literal["a", "b", "tie"]
PAIR_VERDICTS: tuple[PairVerdict, ...] = ("a", "b", "tie")
PairOrder = Literal["ab", "ba"]


class FlagBase(Record):
    """What every flag says: where (field, span in the original text), what found it, and why."""

    field: str | None = None
    span: tuple[int, int] | None = None
    source: str
    reason: str

    @field_validator("span")
    @classmethod
    def _ordered(cls, value: tuple[int, int] | None) -> tuple[int, int] | None:
        if value is not None and not 0 <= value[0] <= value[1]:
            raise ValueError(f"span must be [start, end) with 0 <= start <= end, got {list(value)}")
        return value


class PiiFlag(FlagBase):
    """A personal identifier, or text shaped like one. ``action`` says what preprocess did:

    - ``replaced``: ``before`` is the original text, ``after`` the placeholder written in its place (names are
      numbered per scenario: ``[NAME_1]``, ``[NAME_2]``...);
    - ``review``: a plausible identifier without enough evidence (a nickname with no cue, a given name next to an
      unknown capitalised word), kept as it is (``after`` = ``before``) for a curator to look at;
    - ``kept``: identifier-shaped but public (a crisis hotline, an emergency or toll-free number), kept on purpose.
    """

    kind: Literal["pii"] = "pii"
    entity: PiiEntity
    before: str
    after: str
    action: PiiAction = "replaced"


class SensitiveFlag(FlagBase):
    """Sensitive or offensive content: a lexicon term (``text`` is the matched term) or the LLM classifier's
    verdict on the whole scenario (``field``/``span`` None, ``source`` ``llm:<model>``)."""

    kind: Literal["sensitive"] = "sensitive"
    category: str
    text: str | None = None


class MetaTextFlag(FlagBase):
    """The generating model's meta-commentary (e.g. "（不符合角色设定，重新生成）"). ``removed`` says whether the
    cleaned file lost it (``after`` is then empty); it stays when removing it would empty the field."""

    kind: Literal["meta_text"] = "meta_text"
    rule: str
    before: str
    after: str
    removed: bool


class RoleplayFlag(FlagBase):
    """A reply that speaks as an AI or assistant instead of the persona; ``text`` is the giveaway."""

    kind: Literal["broken_roleplay"] = "broken_roleplay"
    rule: str
    text: str


class TemplateFlag(FlagBase):
    """A reference that is empty in substance (punctuation only), a template or a copy of the input."""

    kind: Literal["template_reference"] = "template_reference"
    rule: str
    text: str


class DuplicateFlag(FlagBase):
    """This scenario repeats ``of`` (the first one in file order); ``method`` exact or near (MinHash candidate
    confirmed by a rapidfuzz ratio of ``similarity`` in [0, 1])."""

    kind: Literal["duplicate"] = "duplicate"
    of: str
    similarity: float = Field(ge=0, le=1)
    method: Literal["exact", "near"]


Flag = Annotated[
    PiiFlag | SensitiveFlag | MetaTextFlag | RoleplayFlag | TemplateFlag | DuplicateFlag,
    Field(discriminator="kind"),
]


class FieldEdit(Record):
    """One field the cleaned scenario changed: its whole text before and after."""

    field: str
    before: str
    after: str


class ScenarioReport(Record):
    """One line of ``h2h preprocess --report``: every flag of one scenario and the fields it changed."""

    id: str = Field(min_length=1)
    flags: list[Flag]
    edits: list[FieldEdit] = Field(default_factory=list)


class SimulationAxes(Record):
    """Where one simulated conversation sits on the diversity axes (values from the axes file)."""

    user_persona: str
    companion: str
    emotion: str
    complexity: str
    interaction_type: str


class Provenance(Record):
    """How one simulated scenario was made (``provenance.jsonl`` beside ``scenarios.jsonl``, same ids)."""

    id: str = Field(min_length=1)
    subtask: Subtask
    index: int = Field(ge=0)
    seed: int
    simulator_model: str
    companion_model: str
    axes: SimulationAxes
    turns: int = Field(ge=1)
    prompt_version: str
    companion_prompt_version: str


class RemovedDuplicate(Record):
    """A simulated scenario left out of ``scenarios.jsonl`` because it nearly repeats ``of`` (kept)."""

    id: str = Field(min_length=1)
    of: str
    similarity: float = Field(ge=0, le=1)
    method: Literal["exact", "near"]
    user_input: str
    reference: str


class ScreenSample(Record):
    """One of the k pre-screen samples: the raw answer, its evidence (the text before the verdict) and verdict."""

    index: int = Field(ge=0)
    raw: str | None
    evidence: str | None = None
    verdict: ScreenVerdict | None = None
    error: str | None = None


class PrescreenVerdict(Record):
    """``h2h prescreen``: the aggregated verdict of k evidence-first samples (Multiple Evidence Calibration).

    ``votes`` counts the parsed samples per verdict; ``uncertainty`` is their entropy normalised to [0, 1]
    (1 when no sample could be read); ``reasons`` are the evidence texts of the samples that voted ``verdict``.
    """

    id: str = Field(min_length=1)
    verdict: ScreenVerdict | None
    votes: dict[ScreenVerdict, int]
    uncertainty: float = Field(ge=0, le=1)
    needs_human: bool
    reasons: list[str]
    samples: list[ScreenSample]
    judge_model: str
    prompt_version: str


class PairInput(Record):
    """One line of ``h2h judge-pairs`` input: two responses to one prompt."""

    id: str = Field(min_length=1)
    prompt: str
    response_a: str
    response_b: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class PairSample(Record):
    """One judge answer on one order: ``shown`` is the bracket verdict as shown ("A" = the first response),
    ``verdict`` what it means for the underlying pair ("a", "b" or "tie")."""

    order: PairOrder
    index: int = Field(ge=0)
    raw: str | None
    shown: Literal["A", "B", "C"] | None = None
    verdict: PairVerdict | None = None
    error: str | None = None


class PairJudgment(Record):
    """``h2h judge-pairs``: a pair judged in both orders (Balanced Position Calibration).

    ``order_verdicts`` is each order's majority; ``consistent`` is true when both orders agree, and only then is
    there a ``winner``. ``first_shown_rate`` is the share of decisive samples that picked the response shown
    first (1.0 for a judge that always prefers position A).
    """

    id: str = Field(min_length=1)
    winner: PairVerdict | None
    consistent: bool
    needs_human: bool
    uncertainty: float = Field(ge=0, le=1)
    order_verdicts: dict[PairOrder, PairVerdict | None]
    votes: dict[PairVerdict, int]
    first_shown_rate: float | None = Field(default=None, ge=0, le=1)
    samples: list[PairSample]
    judge_model: str
    prompt_version: str


class QueueItem(Record):
    """One line of ``queue.jsonl``: the order in which people should look at items, most uncertain first."""

    rank: int = Field(ge=1)
    id: str = Field(min_length=1)
    source: Literal["prescreen", "pairs", "preprocess"]
    uncertainty: float = Field(ge=0, le=1)
    needs_human: bool
    verdict: str | None
    flags: list[FlagKind] = Field(default_factory=list)
    reason: str


#: The file kinds ``h2h validate`` learns from this module (see :data:`pipeline.dataset.FILE_KINDS`).
CURATION_FILE_KINDS: dict[str, type[Record]] = {
    "preprocess_report": ScenarioReport,
    "simulation_provenance": Provenance,
    "simulation_duplicates": RemovedDuplicate,
    "prescreen": PrescreenVerdict,
    "pair_inputs": PairInput,
    "pair_judgments": PairJudgment,
    "review_queue": QueueItem,
}
