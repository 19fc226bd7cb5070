"""Whole ``h2h`` commands as a user runs them: start-up, ``h2h agreement`` and ``h2h score-pairs``, side by side.

Every command runs in a fresh interpreter (``python -m pipeline.cli ...``, what the ``h2h`` script does) and is
timed by wall clock, the median of ``--repeats`` runs, with its CPU time (user + system of the child) beside it,
which moves less on a shared machine:

* start-up: ``h2h --help``, ``h2h agreement --help``, ``h2h score-pairs --help``, with the heaviest top-level
  imports of each (``python -X importtime``, cumulative ms);
* ``h2h agreement --votes FILE.csv --level nominal`` on ``--items`` × ``--raters`` answers (bench_agreement's
  synthetic votes, 5 labels): whole command, and net of start-up (minus ``h2h agreement --help``, and minus
  ``h2h --help``);
* ``h2h score-pairs IN.jsonl -o OUT.jsonl --embedder none`` on ``--pairs`` Chinese pairs (bench_lexical's pairs):
  whole command against the naive loop in this process (sacrebleu's ``BLEU(max_ngram_order=n).sentence_score``
  for n = 1..4 + ``RougeScorer.score`` per pair, ``pipeline.scoring.lexical.LibraryScorer``), pairs/s and ratio.

Inputs are built in a temporary folder. Run: ``python benchmarks/bench_commands.py`` (defaults: paper scale,
4,650 × 20 answers and 30,000 pairs). Figures, never assertions: see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmarks build the inputs

from bench_agreement import long_form, synthetic_votes  # noqa: E402
from bench_lexical import build_pairs  # noqa: E402


def h2h_seconds(args: Sequence[str], repeats: int) -> tuple[float, float]:
    """The median wall time and median CPU time (user + system) of ``h2h ARGS`` in a fresh interpreter (it must
    succeed). CPU time moves less than wall time on a shared machine."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pipeline.cli", *args], check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def top_imports(args: Sequence[str], count: int = 4) -> list[tuple[str, float]]:
    """The ``count`` top-level imports of ``h2h ARGS`` that took longest (cumulative ms, ``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline.cli", *args], capture_output=True, text=True, check=True
    )
    top: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            top.append((parts[2].strip(), int(parts[1]) / 1000))
    return sorted(top, key=lambda pair: -pair[1])[:count]


def bench_startup(repeats: int) -> dict[str, tuple[float, float]]:
    """Print and return the start-up (wall, CPU) seconds of each ``--help``."""
    print("start-up (median wall / CPU, fresh interpreter) and the heaviest top-level imports (-X importtime, ms):")
    found = {}
    for args in (["--help"], ["agreement", "--help"], ["score-pairs", "--help"]):
        found[" ".join(args)] = (wall, cpu) = h2h_seconds(args, repeats)
        heaviest = ", ".join(f"{name} {ms:.0f}" for name, ms in top_imports(args))
        print(f"  h2h {' '.join(args):<20} {wall * 1000:5.0f} ms / {cpu * 1000:5.0f} ms   {heaviest}")
    return found


def bench_agreement(
    folder: Path, items: int, raters: int, repeats: int, startup: dict[str, tuple[float, float]]
) -> None:
    """Print ``h2h agreement``'s whole-command time and its time net of start-up (wall, then CPU)."""
    frame = long_form(synthetic_votes(items, raters, 5, seed=0))
    frame["value"] = frame["value"].astype(int)
    votes = folder / "votes.csv"
    frame.to_csv(votes, index=False)
    whole = h2h_seconds(["agreement", "--votes", str(votes), "--level", "nominal"], repeats)
    print(f"h2h agreement --level nominal, {len(frame):,} answers ({items} items x {raters} raters):")
    for kind, index in (("wall", 0), ("CPU", 1)):
        own, bare = startup["agreement --help"][index], startup["--help"][index]
        print(f"  {kind}: whole command {whole[index]:.3f} s; net of start-up: {whole[index] - own:.3f} s "
              f"(minus h2h agreement --help), {whole[index] - bare:.3f} s (minus h2h --help)")  # fmt: skip


def bench_score_pairs(folder: Path, count: int, repeats: int) -> None:
    """Print ``h2h score-pairs``' whole-command pairs/s against the naive loop's on the same pairs (wall, CPU)."""
    from pipeline.scoring.lexical import LibraryScorer

    pairs = build_pairs(count, max(count // 10, 1), 0)
    source, target = folder / "pairs.jsonl", folder / "scored.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        for number, (hypothesis, reference) in enumerate(pairs):
            record = {"id": f"p{number}", "hypothesis": hypothesis, "reference": reference}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    whole = h2h_seconds(["score-pairs", str(source), "-o", str(target), "--embedder", "none"], repeats)
    library = LibraryScorer("zh")
    start, start_cpu = time.perf_counter(), time.process_time()
    naive = [library.score(hypothesis, reference) for hypothesis, reference in pairs]
    naive_times = (time.perf_counter() - start, time.process_time() - start_cpu)
    scored = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    worst = max(abs(row["bleu4"] - scores.bleu4) for row, scores in zip(scored, naive, strict=True))
    print(f"h2h score-pairs --embedder none, {len(pairs):,} Chinese pairs (largest BLEU-4 difference {worst:.2g}):")
    for kind, index in (("wall", 0), ("CPU", 1)):
        print(f"  {kind}: whole command {whole[index]:.2f} s = {len(pairs) / whole[index]:,.0f} pairs/s; naive loop "
              f"{naive_times[index]:.2f} s = {len(pairs) / naive_times[index]:,.0f} pairs/s; "
              f"naive / whole: {naive_times[index] / whole[index]:.1f}x")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4650)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    startup = bench_startup(args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        bench_agreement(Path(folder), args.items, args.raters, args.repeats, startup)
        bench_score_pairs(Path(folder), args.pairs, max(1, args.repeats // 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
