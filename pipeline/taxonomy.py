"""The benchmark's fixed vocabulary (paper Table 1, ARCHITECTURE.md "Scores"): subtasks, variants, alpha and tau.

Plain constants with no third-party imports, so command-line option choices can use them without
loading pydantic (``h2h --help`` stays fast). :mod:`pipeline.records` re-exports every name.
"""

from __future__ import annotations

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
