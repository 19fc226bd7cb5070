"""``h2h score`` (the score stage of a run directory) and ``h2h score-pairs`` (ad-hoc JSONL pairs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipeline.taxonomy import METRIC_NAMES, ROUGE_MEASURES

if TYPE_CHECKING:
    from pipeline.jsonl import RecordError
    from pipeline.records import ScorePair
    from pipeline.scoring.embedding import Embedder
    from pipeline.taxonomy import RougeMeasure

EMBEDDER_CHOICE = click.Choice(["bge-m3", "minilm", "none"])
TOKENIZER_CHOICE = click.Choice(["zh", "jieba"])
ROUGE_MEASURE_OPTION = click.option(
    "--rouge-measure",
    type=click.Choice(ROUGE_MEASURES),
    default="f",
    show_default=True,
    help="ROUGE-1/L as F-measure or as recall (the paper's 'lexical recall'); part of the score signature.",
)
EMBEDDER_MODEL_OPTION = click.option(
    "--embedder-model",
    default=None,
    envvar="H2H_BGE_M3_MODEL",
    metavar="PATH_OR_ID",
    help="BGE-M3 to load: a local directory or a hub id [env H2H_BGE_M3_MODEL; default BAAI/bge-m3 from the hub].",
)
EMBEDDER_BATCH_OPTION = click.option(
    "--embedder-batch-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Texts per similarity batch [256 on a GPU, 32 on a CPU].",
)
#: The keys of each ``h2h score-pairs`` output line, in order.
OUTPUT_FIELDS = ("id", *METRIC_NAMES)


def _load_embedder_loudly(name: str, model: str | None, batch_size: int | None) -> Embedder | None:
    """Load the embedder; when it stands in for the one asked for, say so on stderr as well as in the log.
    A model the user named that cannot load is a click error."""
    from pipeline.scoring.embedding import EmbedderUnavailable, load_embedder

    try:
        embedder = load_embedder(name, model=model, batch_size=batch_size)
    except EmbedderUnavailable as error:
        raise click.ClickException(str(error)) from error
    if embedder is not None and embedder.fallback_reason:
        click.echo(
            f"warning: {embedder.fallback_reason}; using {embedder.name} instead "
            "(scores carry this embedder in their signature)",
            err=True,
        )
    return embedder


def read_pairs(path: Path) -> tuple[list[ScorePair], list[RecordError]]:
    """Read every input line; return the pairs and every problem (``file:line: field: problem``).

    A repeated id is a problem of the later line; that line's pair is left out.
    """
    from pipeline.jsonl import RecordError, validate_lines
    from pipeline.records import ScorePair

    numbered, problems = validate_lines(path, ScorePair)
    pairs: list[ScorePair] = []
    first_line_of: dict[str, int] = {}
    for number, pair in numbered:
        identity = json.dumps(pair.id)
        if identity in first_line_of:
            problems.append(RecordError(path, number, "id", f"duplicate id (first on line {first_line_of[identity]})"))
            continue
        first_line_of[identity] = number
        pairs.append(pair)
    problems.sort(key=lambda problem: problem.line)
    return pairs, problems


@click.command("score")
@click.option("--run", "run_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Run dir.")
@click.option("--embedder", type=EMBEDDER_CHOICE, default="bge-m3", show_default=True, help="Similarity model.")
@click.option("--tokenizer", type=TOKENIZER_CHOICE, default="zh", show_default=True, help="BLEU/ROUGE tokenisation.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes for BLEU/ROUGE.")
@click.option("--rescore", is_flag=True, help="Replace existing scores made with another signature (kept aside).")
@EMBEDDER_MODEL_OPTION
@EMBEDDER_BATCH_OPTION
@ROUGE_MEASURE_OPTION
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def score_command(
    run_dir: Path,
    embedder: str,
    tokenizer: str,
    workers: int,
    rescore: bool,
    embedder_model: str | None,
    embedder_batch_size: int | None,
    rouge_measure: RougeMeasure,
    no_progress: bool,
) -> None:
    """Score every response of RUN not scored yet (BLEU-1..4, ROUGE-1/L, SS, S); resumes after a kill."""
    from pipeline.jsonl import RecordError
    from pipeline.rundir import RunDir
    from pipeline.scoring.embedding import embedder_name_without_loading
    from pipeline.scoring.run import ScoringError, score_run

    run = RunDir(run_dir)
    if not run.responses.exists():
        raise click.ClickException(f"{run.responses}: no responses to score (run `h2h generate` first)")
    if embedder_name_without_loading(embedder) is None:  # bge-m3: load it here so a fallback is said out loud
        _load_embedder_loudly(embedder, embedder_model, embedder_batch_size)
    try:
        scored = score_run(
            run,
            embedder=embedder,
            tokenizer=tokenizer,
            workers=workers,
            rescore=rescore,
            embedder_model=embedder_model,
            embedder_batch_size=embedder_batch_size,
            rouge_measure=rouge_measure,
            progress=not no_progress,
        )
    except (ScoringError, RecordError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"scored {scored} responses into {run.scores}")


@click.command("score-pairs")
@click.argument("input_path", metavar="IN.jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="OUT.jsonl")
@click.option("--embedder", type=EMBEDDER_CHOICE, default="bge-m3", show_default=True, help="Similarity model.")
@click.option("--tokenizer", type=TOKENIZER_CHOICE, default="zh", show_default=True, help="BLEU/ROUGE tokenisation.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes for BLEU/ROUGE.")
@EMBEDDER_MODEL_OPTION
@EMBEDDER_BATCH_OPTION
@ROUGE_MEASURE_OPTION
def score_pairs_command(
    input_path: Path,
    output: Path,
    embedder: str,
    tokenizer: str,
    workers: int,
    embedder_model: str | None,
    embedder_batch_size: int | None,
    rouge_measure: RougeMeasure,
) -> None:
    """Score {"id","hypothesis","reference"} lines; write id, bleu1..4, rouge1, rougeL, ss, S in input order."""
    from pipeline.jsonl import write_records
    from pipeline.scoring.combine import automatic_scores
    from pipeline.scoring.embedding import cosine_similarities
    from pipeline.scoring.lexical import score_pairs

    pairs, problems = read_pairs(input_path)
    if problems:
        for problem in problems:
            click.echo(str(problem), err=True)
        raise click.ClickException(f"{len(problems)} problem(s) in {input_path}; nothing written")
    texts = [(pair.hypothesis, pair.reference) for pair in pairs]
    lexical = score_pairs(texts, tokenizer=tokenizer, workers=workers, rouge_measure=rouge_measure)
    loaded = _load_embedder_loudly(embedder, embedder_model, embedder_batch_size)
    similarities: list[float | None] = [None] * len(pairs)
    if loaded is not None:
        similarities = list(cosine_similarities(loaded, [h for h, _ in texts], [r for _, r in texts]))
    rows = [
        {"id": pair.id, **automatic_scores(metrics._asdict(), ss)}
        for pair, metrics, ss in zip(pairs, lexical, similarities, strict=True)
    ]
    write_records(output, rows)
    click.echo(f"scored {len(rows)} pairs into {output}")


COMMANDS: tuple[click.Command, ...] = (score_command, score_pairs_command)
