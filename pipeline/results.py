"""The combined results of a run (``RUN/results.jsonl``): S, J_judge, J, J_final and the adjudication flag.

``RUN/results.jsonl`` is derived from ``RUN/scores.jsonl`` (and ``RUN/judgments.jsonl``) by ``h2h judge``.
When the scores change afterwards (``h2h score --rescore``, or more responses scored), the results file
no longer reflects them: :func:`stale_results_reason` says so, :func:`load_current_results` refuses to read
such a file, and ``h2h judge`` rebuilds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.generation.base import Key
from pipeline.jsonl import write_records
from pipeline.records import JUDGED_SUBTASKS, Judgment, Result, Scenario, Score
from pipeline.rundir import RunDir
from pipeline.scoring.combine import combine_j, needs_adjudication


def judge_label(judge_model: str, prompt_version: str | None) -> str:
    """``judge=MODEL|prompt=VERSION``: J values from different labels never mix (in a run or in a table)."""
    return f"judge={judge_model}|prompt={prompt_version or 'unknown'}"


class StaleResultsError(ValueError):
    """``RUN/results.jsonl`` was built from other scores than ``RUN/scores.jsonl`` now holds."""


def _judged_fields(score: Score, judgment: Judgment | None) -> dict[str, Any]:
    """J_judge, J, J_final (= J until a human adjudicates), the flag and the judge's identity of one item."""
    j_judge = judgment.J_judge if judgment is not None else None
    combined = combine_j(score.S, j_judge)
    judged: dict[str, Any] = {"J_judge": j_judge, "J": combined, "J_final": combined}
    judged["needs_adjudication"] = needs_adjudication(combined)
    if judgment is not None:
        judged |= {"judge_model": judgment.judge_model, "judge_prompt_version": judgment.prompt_version}
    return judged


def build_results(
    scenarios: Mapping[str, Scenario], scores: Mapping[Key, Score], judgments: Mapping[Key, Judgment]
) -> list[Result]:
    """One Result per score, in score order (pure).

    For itinerary levels I-III: ``J = combine_j(S, J_judge)``, ``J_final = J`` and
    ``needs_adjudication(J)`` (so a missing judgment flags the item); other subtasks carry S only. A flagged item's
    J_final is no final score until experts adjudicate it in the studio: the leaderboard counts it as pending
    (``pipeline.leaderboard.item_values``).
    """
    results = []
    for key, score in scores.items():
        scenario = scenarios.get(score.scenario_id)
        subtask = scenario.subtask if scenario is not None else score.subtask
        judged = _judged_fields(score, judgments.get(key)) if subtask in JUDGED_SUBTASKS else {}
        results.append(
            Result(
                scenario_id=score.scenario_id,
                model=score.model,
                variant=score.variant,
                subtask=subtask,
                S=score.S,
                signature=score.signature,
                **judged,
            )
        )
    return results


def require_scores(run: RunDir) -> None:
    """Raise FileNotFoundError (saying which command makes them) when the run has no scores yet: ``h2h judge``
    calls this before its first judge request, so an unscored run costs no judge call."""
    if not run.scores.exists():
        raise FileNotFoundError(f"{run.scores}: no scores yet; run `h2h score --run {run.root}` first")


def write_results(run: RunDir, *, use_judgments: bool = True) -> tuple[int, int]:
    """Write ``RUN/results.jsonl`` from the run's scores (and judgments unless ``use_judgments`` is False).

    The file is replaced atomically, so a stale one is always rebuilt whole. Returns
    ``(results written, items flagged for adjudication)``; FileNotFoundError when the run has no scores.
    """
    require_scores(run)
    judgments = run.load(run.judgments, Judgment) if use_judgments else {}
    results = build_results(run.load_scenarios(), run.load(run.scores, Score), judgments)
    write_records(run.results, results)
    return len(results), sum(result.needs_adjudication for result in results)


def _mismatch(results: Mapping[Key, Result], scores: Mapping[Key, Score]) -> str | None:
    """Describe the first way ``results`` differ from what ``scores`` give (keys, signature, S), or None."""
    missing, extra = scores.keys() - results.keys(), results.keys() - scores.keys()
    if missing:
        return f"{len(missing)} scored response(s) have no result, e.g. {sorted(missing)[0]}"
    if extra:
        return f"{len(extra)} result(s) have no score any more, e.g. {sorted(extra)[0]}"
    for key, score in scores.items():
        result = results[key]
        if result.signature != score.signature:
            return (
                f"results carry the score signature {result.signature.label()}, "
                f"the scores {score.signature.label()} (e.g. {key})"
            )
        if result.S != score.S:
            return f"result S {result.S} differs from score S {score.S} for {key}"
    return None


def _judgment_mismatch(results: Mapping[Key, Result], judgments: Mapping[Key, Judgment]) -> str | None:
    """For results built with judgments (some name a judge): the first judgment they do not reflect, or None.

    Results built without any (``h2h judge --no-judge``) are not compared: they leave judgments out on purpose.
    """
    if not any(result.judge_model for result in results.values()):
        return None
    for key, judgment in judgments.items():
        result = results.get(key)
        if result is not None and (result.J_judge, result.judge_model) != (judgment.J_judge, judgment.judge_model):
            return f"the judgment of {key} ({judgment.judge_model}: {judgment.J_judge}) is not in its result"
    return None


def stale_results_reason(run: RunDir) -> str | None:
    """Why ``RUN/results.jsonl`` no longer reflects the run; None when it does or there are no results or scores.

    Compares keys, score signatures and S item by item with ``RUN/scores.jsonl``, so results built before
    ``h2h score --rescore`` (or before more responses were scored) are caught; results built with judgments
    must also hold every judgment of ``RUN/judgments.jsonl`` (a judge killed before rebuilding them).
    """
    if not run.results.exists() or not run.scores.exists():
        return None
    results = run.load(run.results, Result)
    reason = _mismatch(results, run.load(run.scores, Score))
    if reason is not None:
        return f"{run.results} is stale: it was built from other scores than {run.scores} holds now ({reason})"
    reason = _judgment_mismatch(results, run.load(run.judgments, Judgment))
    if reason is not None:
        return f"{run.results} is stale: {run.judgments} changed since it was built ({reason})"
    return None


def check_results_current(run: RunDir) -> None:
    """Raise :class:`StaleResultsError` (saying how to rebuild) when ``RUN/results.jsonl`` is stale."""
    reason = stale_results_reason(run)
    if reason is not None:
        raise StaleResultsError(f"{reason}; rebuild it with `h2h judge --run {run.root}` (or `--no-judge`)")


def load_current_results(run: RunDir) -> dict[Key, Result]:
    """Return ``RUN/results.jsonl`` by key, after :func:`check_results_current` (empty when there is none).

    Readers of a run's results (the leaderboard, ``h2h ingest``) use this so stale J values never pass.
    """
    check_results_current(run)
    return run.load(run.results, Result)
