"""Table 2 with intervals at the paper's scale: ``h2h leaderboard`` end to end on a seeded random results file.

Writes ``--models`` (50) × ``--scenarios`` (4,650, spread over the 11 subtasks) × 2 variants = 465,000 score lines
(itinerary I–III with J_final; every line with its scenario_id, so the bootstrap is paired), then runs the whole
command ``h2h leaderboard --scores FILE --variant with_sap --resamples 1000`` as a subprocess and prints its wall time
(goal < 5 s), then times the bootstrap (``pipeline.leaderboard_intervals.leaderboard_intervals``) and the fragility
(``pipeline.leaderboard_fragility.leaderboard_fragility``) on their own, in process.
Run: ``python benchmarks/bench_table2_intervals.py [--models 50] [--scenarios 4650] [--resamples 1000]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pipeline.leaderboard import load_score_rows, select_rows
from pipeline.leaderboard_fragility import leaderboard_fragility
from pipeline.leaderboard_intervals import leaderboard_intervals
from pipeline.records import JUDGED_SUBTASKS, SUBTASKS


def write_scores(path: Path, *, models: int, scenarios: int, seed: int = 0) -> int:
    """Seeded random score lines (each model a skill offset plus noise); returns how many were written."""
    rng = np.random.default_rng(seed)
    lines = 0
    with path.open("w", encoding="utf-8") as handle:
        for model in range(models):
            skill = rng.normal(0.0, 0.05)
            s_values = np.clip(0.5 + skill + rng.normal(0.0, 0.2, size=(scenarios, 2)), 0.0, 1.0)
            j_values = np.clip(5 * s_values + rng.normal(0.0, 0.3, size=(scenarios, 2)), 0.0, 5.0)
            for scenario in range(scenarios):
                subtask = SUBTASKS[scenario % len(SUBTASKS)]
                for index, variant in enumerate(("with_sap", "without_sap")):
                    row = {
                        "model": f"model-{model:02d}",
                        "subtask": subtask,
                        "scenario_id": f"sc-{scenario}",
                        "variant": variant,
                        "S": float(s_values[scenario, index]),
                    }
                    if subtask in JUDGED_SUBTASKS:
                        row["J_final"] = float(j_values[scenario, index])
                    handle.write(json.dumps(row) + "\n")
                    lines += 1
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--scenarios", type=int, default=4650)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        scores = Path(folder) / "scores.jsonl"
        lines = write_scores(scores, models=args.models, scenarios=args.scenarios)
        command = [sys.executable, "-m", "pipeline.cli", "leaderboard", "--scores", str(scores)]
        command += ["--variant", "with_sap", "--resamples", str(args.resamples)]
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        rows = select_rows(load_score_rows(scores), variant="with_sap")
        started = time.perf_counter()
        intervals = leaderboard_intervals(rows, resamples=args.resamples)
        bootstrap = time.perf_counter() - started
        started = time.perf_counter()
        leaderboard_fragility(rows, intervals.board.table)
        fragility = time.perf_counter() - started
    print(f"{lines:,} score lines ({len(rows):,} in the with_sap table), {args.resamples:,} resamples")
    print(f"h2h leaderboard, whole command: {wall:.2f} s (goal < 5 s)")
    print(f"bootstrap (intervals + rank ranges): {bootstrap:.2f} s; fragility: {fragility:.2f} s")


if __name__ == "__main__":
    main()
