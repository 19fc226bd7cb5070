"""The score stage: every response of a run directory gets BLEU-1..4, ROUGE-1/L, SS and S.

Resumable: responses already in ``RUN/scores.jsonl`` are skipped, and the work is cut into blocks
that depend only on the set of responses (whole scenarios, in scenario order), never on what is left
to do. Each block's texts are embedded together, so a resumed run embeds every text in the same
batch as a clean run would and writes the same lines in the same order.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from importlib.metadata import version
from itertools import chain
from typing import Any

from tqdm import tqdm

from pipeline.records import Response, RougeMeasure, Scenario, Score, ScoreSignature, utc_now
from pipeline.rundir import RunDir
from pipeline.scoring.combine import automatic_scores
from pipeline.scoring.embedding import Embedder, cosine_similarities, embedder_name_without_loading, load_embedder
from pipeline.scoring.lexical import LexicalScores, make_pool, score_groups
from pipeline.scoring.tokenize import get_tokenizer

logger = logging.getLogger(__name__)

Key = tuple[str, str, str]
#: Responses per block (rounded up to whole scenarios): the unit of embedding batches and of resumption.
BLOCK_SIZE = 256


class ScoringError(ValueError):
    """The run directory cannot be scored as asked (missing scenario, mixed signatures)."""


def score_signature(tokenizer: str, embedder_name: str, rouge_measure: RougeMeasure = "f") -> ScoreSignature:
    """The signature every score made with these settings carries (``embedder_name``: ``Embedder.name`` or none)."""
    return ScoreSignature(
        sacrebleu=version("sacrebleu"),
        rouge_score=version("rouge-score"),
        tokenizer=get_tokenizer(tokenizer).name,
        embedder=embedder_name,
        rouge_measure=rouge_measure,
    )


def plan_blocks(responses: list[Response], scenario_order: dict[str, int], block_size: int) -> list[list[Response]]:
    """Cut responses into blocks of whole scenarios, ordered by scenario then model then variant."""
    ordered = sorted(responses, key=lambda r: (scenario_order[r.scenario_id], r.model, r.variant))
    blocks: list[list[Response]] = []
    current: list[Response] = []
    for response in ordered:
        if current and len(current) >= block_size and current[-1].scenario_id != response.scenario_id:
            blocks.append(current)
            current = []
        current.append(response)
    if current:
        blocks.append(current)
    return blocks


def _check_signatures(run: RunDir, existing: dict[Key, Score], signature: ScoreSignature, rescore: bool) -> bool:
    """Return whether existing scores may be kept; for ``rescore`` archive them (and the results built from
    them), else refuse to mix."""
    others = {score.signature.label() for score in existing.values()} - {signature.label()}
    if not others:
        return True
    if not rescore:
        raise ScoringError(
            f"{run.scores} holds scores made with {sorted(others)[0]}, not {signature.label()}; scores with "
            "different signatures never mix: score into a new run directory, or pass --rescore to replace them"
        )
    stamp = f"{utc_now():%Y%m%dT%H%M%S}"
    archive = run.scores.with_name(f"scores.replaced-{stamp}.jsonl")
    shutil.move(run.scores, archive)
    logger.warning("--rescore: moved %d earlier scores to %s", len(existing), archive)
    if run.results.exists():  # built from the replaced scores: it goes with them, `h2h judge` builds a new one
        results_archive = run.results.with_name(f"results.replaced-{stamp}.jsonl")
        shutil.move(run.results, results_archive)
        logger.warning("--rescore: moved the results built from them to %s", results_archive)
    return False


def _block_work(
    block: list[Response], references: dict[str, str], todo: set[Key]
) -> tuple[list[Key], list[tuple[str, list[str]]]]:
    """The block's unscored keys, and their texts as ``(reference, hypotheses)`` groups (one per scenario).

    Blocks are sorted by scenario, so the groups' hypotheses, concatenated, follow the keys' order.
    """
    keys: list[Key] = []
    groups: dict[str, list[str]] = {}
    for response in block:
        if response.key in todo:
            keys.append(response.key)
            groups.setdefault(response.scenario_id, []).append(response.text)
    return keys, [(references[scenario_id], texts) for scenario_id, texts in groups.items()]


def _similarities(embedder: Embedder | None, block: list[Response], references: dict[str, str]) -> dict[Key, float]:
    """SS of every response of the block (the whole block, so the embedding batch never depends on progress)."""
    if embedder is None:
        return {}
    values = cosine_similarities(embedder, [r.text for r in block], [references[r.scenario_id] for r in block])
    return {response.key: value for response, value in zip(block, values, strict=True)}


def _lexical_results(
    work: list[list[tuple[str, list[str]]]], tokenizer: str, workers: int, rouge_measure: RougeMeasure
) -> Iterator[list[LexicalScores]]:
    """Yield each block's lexical scores, flat; with a pool, a few blocks are computed ahead."""
    if workers <= 1:
        for groups in work:
            yield list(chain.from_iterable(score_groups(groups, tokenizer, rouge_measure)))
        return
    with make_pool(workers) as pool:
        pending: deque[Future[list[list[LexicalScores]]]] = deque()
        queued = iter(work)
        for groups in queued:
            pending.append(pool.submit(score_groups, groups, tokenizer, rouge_measure))
            if len(pending) >= workers * 2:
                break
        while pending:
            result = pending.popleft().result()
            upcoming = next(queued, None)
            if upcoming is not None:
                pending.append(pool.submit(score_groups, upcoming, tokenizer, rouge_measure))
            yield list(chain.from_iterable(result))


def _make_score(
    response: Response, subtask: str, metrics: LexicalScores, ss: float | None, signature: ScoreSignature
) -> Score:
    return Score(
        scenario_id=response.scenario_id, model=response.model, variant=response.variant, subtask=subtask,
        **automatic_scores(metrics._asdict(), ss), signature=signature,
    )  # fmt: skip


def _score_blocks(
    run: RunDir,
    blocks: list[list[Response]],
    scenarios: dict[str, Scenario],
    todo: set[Key],
    embedder: Embedder | None,
    signature: ScoreSignature,
    tokenizer: str,
    workers: int,
    bar: tqdm[Any],
) -> int:
    """Score the unscored responses of ``blocks`` and append them block by block; return how many."""
    references = {scenario_id: scenario.reference for scenario_id, scenario in scenarios.items()}
    work = [_block_work(block, references, todo) for block in blocks]
    responses = {r.key: r for block in blocks for r in block}
    written = 0
    with run.appender(run.scores) as out:
        lexical = _lexical_results([groups for _, groups in work], tokenizer, workers, signature.rouge_measure)
        for block, (keys, _), metrics in zip(blocks, work, lexical, strict=True):
            similarity = _similarities(embedder, block, references)
            for key, key_metrics in zip(keys, metrics, strict=True):
                subtask = scenarios[key[0]].subtask
                out.append(_make_score(responses[key], subtask, key_metrics, similarity.get(key), signature))
            written += len(keys)
            bar.update(len(keys))
    return written


def score_run(
    run: RunDir,
    *,
    embedder: str,
    tokenizer: str,
    workers: int,
    rescore: bool = False,
    progress: bool = True,
    block_size: int = BLOCK_SIZE,
    embedder_model: str | None = None,
    embedder_batch_size: int | None = None,
    rouge_measure: RougeMeasure = "f",
) -> int:
    """Score every response of ``run`` not yet in ``RUN/scores.jsonl``; return how many were scored now.

    Appends one :class:`Score` per response (crash-safe lines) and records the stage in the manifest.
    Raises :class:`ScoringError` when a response names an unknown scenario or when the existing scores
    carry another signature (unless ``rescore``, which moves them aside and starts over). ``embedder_model``: the
    BGE-M3 model to load (hub id or local directory; see :func:`pipeline.scoring.embedding.load_embedder`);
    ``embedder_batch_size``: texts per batch (default: by device); ``rouge_measure``: ROUGE-1/L as F-measure or
    recall (part of the signature, so a run scored one way refuses the other without ``rescore``).
    """
    scenarios = run.load_scenarios()
    responses = list(run.load(run.responses, Response).values())
    unknown = sorted({r.scenario_id for r in responses} - scenarios.keys())
    if unknown:
        raise ScoringError(f"{run.responses}: responses name scenarios missing from {run.scenarios}: {unknown[:5]}")
    # A model is loaded only when its name is not known otherwise, or when there is something to score: a re-run
    # with every response scored already does not wait for one.
    known_name = embedder_name_without_loading(embedder)
    loaded = (
        load_embedder(embedder, model=embedder_model, batch_size=embedder_batch_size) if known_name is None else None
    )
    signature = score_signature(tokenizer, known_name or (loaded.name if loaded is not None else "none"), rouge_measure)
    existing = run.load(run.scores, Score)
    if not _check_signatures(run, existing, signature, rescore):
        existing = {}
    todo = {r.key for r in responses} - existing.keys()
    order = {scenario_id: index for index, scenario_id in enumerate(scenarios)}
    blocks = [b for b in plan_blocks(responses, order, block_size) if any(r.key in todo for r in b)]
    if blocks and loaded is None and known_name != "none":
        loaded = load_embedder(embedder, model=embedder_model, batch_size=embedder_batch_size)
    bar = tqdm(total=len(todo), desc="score", unit="response", file=sys.stderr, disable=not progress)
    with bar:
        written = _score_blocks(run, blocks, scenarios, todo, loaded, signature, tokenizer, workers, bar)
    run.record_stage(
        "score", embedder=signature.embedder, embedder_requested=embedder, tokenizer=signature.tokenizer,
        rouge_measure=rouge_measure,
        workers=workers, scored=written, already_scored=len(existing), signature=signature.model_dump(),
    )  # fmt: skip
    logger.info("scored %d responses (%d were already scored)", written, len(existing))
    return written
