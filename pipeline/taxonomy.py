"""The benchmark's fixed vocabulary (paper Table 1, ARCHITECTURE.md "Scores"): subtasks, variants, alpha and tau,
and the one list of metric names (:data:`METRICS`).

Plain constants with no third-party imports, so command-line option choices can use them without
loading pydantic (``h2h --help`` stays fast). :mod:`pipeline.records` re-exports the subtask, variant, alpha and
tau names; the metric names are imported from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Subtask = Literal[
    "dialogue_base",
    "dialogue_emotion",
    "dialogue_schedule",
    "recollection_synthesis",
    "recollection_refinement",
    "recollection_initialization",
    "itinerary_basic",
    "itinerary_middle",
    "itinerary_advanced",
    "itinerary_response",
    "itinerary_initialization",
]
Dimension = Literal["dialogue", "recollection", "itinerary"]
Variant = Literal["with_sap", "without_sap"]
InstructionKind = Literal["explicit", "implicit_help", "ambiguous", "context_aware"]

VARIANTS: tuple[Variant, ...] = ("with_sap", "without_sap")

#: Paper Table 1: scenarios per subtask, in the paper's column order within each dimension.
TABLE1_COUNTS: dict[str, int] = {
    "dialogue_base": 1882,
    "dialogue_emotion": 99,
    "dialogue_schedule": 533,
    "recollection_synthesis": 412,
    "recollection_refinement": 589,
    "recollection_initialization": 102,
    "itinerary_basic": 207,
    "itinerary_middle": 444,
    "itinerary_advanced": 143,
    "itinerary_response": 163,
    "itinerary_initialization": 76,
}
SUBTASKS: tuple[str, ...] = tuple(TABLE1_COUNTS)

DIMENSION_OF_SUBTASK: dict[str, Dimension] = {
    subtask: subtask.split("_", 1)[0]  # type: ignore[misc]
    for subtask in SUBTASKS
}

#: Itinerary levels I-III: scored with the LLM judge and J (ARCHITECTURE.md "Scores").
JUDGED_SUBTASKS: frozenset[str] = frozenset({"itinerary_basic", "itinerary_middle", "itinerary_advanced"})

#: J = ALPHA * 5S + (1 - ALPHA) * J_judge; items with J < TAU go to human adjudication.
ALPHA = 0.6
TAU = 3.5

#: How ROUGE-1 and ROUGE-L enter S: the F-measure (the default, ARCHITECTURE.md "Scores") or recall (the paper's
#: "lexical recall"). Part of every score's signature, so the two never share a table.
RougeMeasure = Literal["f", "recall"]
ROUGE_MEASURES: tuple[RougeMeasure, ...] = ("f", "recall")


@dataclass(frozen=True)
class Metric:
    """One score of a response, as every module names, labels and ranges it (ARCHITECTURE.md "Scores").

    ``name`` is the field of a score record, the key in scores.jsonl and the store column; ``label`` is what people
    read; values lie in [``low``, ``high``]. ``in_s``: the metric is one of the terms S averages. ``in_table3``: paper
    Table 3 reports it (and the curation page shows it beside each response).
    """

    name: str
    label: str
    low: float = 0.0
    high: float = 1.0
    in_s: bool = False
    in_table3: bool = False


#: The name of the similarity metric (the one term of S that is not lexical) and of the combined score S.
SIMILARITY_METRIC = "ss"
COMBINED_METRIC = "S"

#: The automatic metrics, in the order of every score record, scores.jsonl line, table and export: BLEU-1..4,
#: ROUGE-1, ROUGE-L, SS, then S. The single declaration: everything that lists metric names derives from it, and a
#: test (tests/pipeline/test_metric_names.py) fails when another module types the names out again.
METRICS: tuple[Metric, ...] = (
    *(Metric(f"bleu{order}", f"BLEU-{order}", in_s=True, in_table3=order == 4) for order in range(1, 5)),
    Metric("rouge1", "ROUGE-1", in_s=True),
    Metric("rougeL", "ROUGE-L", in_s=True, in_table3=True),
    Metric(SIMILARITY_METRIC, "SS", in_s=True, in_table3=True),
    Metric(COMBINED_METRIC, "S"),
)
#: The judge's and the experts' scores, each in [0, 5]: J_judge, J (from S and J_judge), J_human, J_final.
JUDGE_SCORES: tuple[Metric, ...] = tuple(
    Metric(name, name, high=5.0) for name in ("J_judge", "J", "J_human", "J_final")
)

METRIC_NAMES: tuple[str, ...] = tuple(metric.name for metric in METRICS)
#: The terms S averages, in the order they are summed.
S_TERMS: tuple[str, ...] = tuple(metric.name for metric in METRICS if metric.in_s)
#: Paper Table 3's automatic metrics (also shown beside each response on the curation page), in order.
TABLE3_METRIC_NAMES: tuple[str, ...] = tuple(metric.name for metric in METRICS if metric.in_table3)
JUDGE_SCORE_NAMES: tuple[str, ...] = tuple(metric.name for metric in JUDGE_SCORES)
#: Every automatic metric's and judge score's label, by name.
METRIC_LABELS: dict[str, str] = {metric.name: metric.label for metric in (*METRICS, *JUDGE_SCORES)}
