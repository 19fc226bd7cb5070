"""Prediction-powered itinerary scores (``studio.results.ppi.cell_estimate``, i.e. ``ppi_py``'s PPI++) on simulated
studies at the paper's scale: per cell ``--judged`` items scored by the judge (4,650: one model's itinerary I–III
items), ``--audited`` of them (300) also scored by experts, the judge correlated ``--rho`` (0.7) with the experts and
``--bias`` points too kind. Each of ``--studies`` seeded studies draws fresh scores; the true human mean is known
(60), so the coverage of the 95% interval can be counted.

Prints: the coverage of the 95% PPI interval (goal 93–97%) beside the human-only interval's, the mean effective
sample size against the experts alone (n × (human-only width / PPI width)², goal ≥ 1.3 × n), the mean widths, and
the time per estimate. Run: ``python benchmarks/bench_ppi.py [--studies 1000] [--judged 4650] [--audited 300]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

TRUE_MEAN, SPREAD = 60.0, 15.0


def study(rng: np.random.Generator, *, n: int, big_n: int, rho: float, bias: float) -> tuple[np.ndarray, ...]:
    """One simulated cell: the experts' scores on the n audited items, the judge's on them and on the N others."""
    human = rng.normal(TRUE_MEAN, SPREAD, size=n + big_n)
    judge = TRUE_MEAN + bias + rho * (human - TRUE_MEAN) + math.sqrt(1 - rho**2) * rng.normal(0, SPREAD, n + big_n)
    return human[:n], judge[:n], judge[n:]


def main() -> None:
    from studio.results.ppi import cell_estimate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--judged", type=int, default=4650, help="judged items per cell, the audited included")
    parser.add_argument("--audited", type=int, default=300)
    parser.add_argument("--rho", type=float, default=0.7)
    parser.add_argument("--bias", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    covered = human_covered = 0
    ratios, ppi_widths, human_widths, seconds, correlations = [], [], [], [], []
    for _ in range(args.studies):
        y, yhat, rest = study(rng, n=args.audited, big_n=args.judged - args.audited, rho=args.rho, bias=args.bias)
        correlations.append(float(np.corrcoef(y, yhat)[0, 1]))
        started = time.perf_counter()
        estimate = cell_estimate(y=y, yhat=yhat, yhat_unlabelled=rest)
        seconds.append(time.perf_counter() - started)
        covered += estimate["ppi_low"] <= TRUE_MEAN <= estimate["ppi_high"]
        human_covered += estimate["human_low"] <= TRUE_MEAN <= estimate["human_high"]
        ratios.append(estimate["effective_n"] / args.audited)
        ppi_widths.append(estimate["ppi_high"] - estimate["ppi_low"])
        human_widths.append(estimate["human_high"] - estimate["human_low"])
    print(
        f"studies {args.studies}; per cell N = {args.judged} judged, n = {args.audited} audited; judge rho "
        f"{statistics.fmean(correlations):.3f} (mean sample), bias +{args.bias} points; true mean {TRUE_MEAN}"
    )
    print(
        f"coverage of the 95% PPI interval: {covered / args.studies:.1%} (goal 93-97%); "
        f"human-only interval: {human_covered / args.studies:.1%}"
    )
    print(
        f"effective n / n: mean {statistics.fmean(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}; "
        f"goal >= 1.3x) = {statistics.fmean(ratios) * args.audited:.0f} expert-scored items' worth"
    )
    print(
        f"mean 95% width: PPI {statistics.fmean(ppi_widths):.2f} points, human only "
        f"{statistics.fmean(human_widths):.2f} points"
    )
    print(
        f"time per estimate (point + interval + human-only): median {1000 * statistics.median(seconds):.2f} ms, "
        f"p95 {1000 * sorted(seconds)[int(0.95 * len(seconds))]:.2f} ms"
    )


if __name__ == "__main__":
    main()
