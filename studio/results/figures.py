"""Writing matplotlib figures to files without a display (Agg backend), and the score-distribution plot.

Model names, request kinds and other data shown in a figure are untrusted text: matplotlib would read a pair of ``$``
in one as mathtext (``$\\frac{a}{b}$`` drawn as a fraction, a malformed one an exception), so every such label goes
through :func:`inert_label` first and is drawn literally. Figures are saved cropped to their content, so a legend or
a long tick label placed outside the axes is never cut off.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd


def inert_label(value: object) -> str:
    """``value`` as text matplotlib draws literally: every ``$`` escaped, so no mathtext is parsed."""
    return str(value).replace("$", r"\$")


def wrapped_label(value: object, *, width: int = 18) -> str:
    """:func:`inert_label` of ``value``, wrapped onto lines of at most ``width`` characters (at spaces and hyphens,
    long words broken), for tick labels that must not run into each other."""
    lines = textwrap.wrap(str(value), width=width, break_on_hyphens=True) or [""]
    return "\n".join(inert_label(line) for line in lines)


def longest_line(labels: Iterable[str]) -> int:
    """The length of the longest line among ``labels`` (0 for none)."""
    return max((len(line) for label in labels for line in label.split("\n")), default=0)


@contextmanager
def saved_figure(path: Path | str, *, size: tuple[float, float]) -> Iterator[Any]:
    """Yield the axes of a new ``size`` (inches) figure; when the block ends without error, lay the figure out and
    save it to ``path`` (format by suffix, parent folders created). The figure is closed either way, so repeated
    plots in a long-running server do not pile up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=size)
    try:
        yield axes
        figure.tight_layout()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, bbox_inches="tight", dpi=110)
    finally:
        plt.close(figure)


def plot_score_distribution(frame: pd.DataFrame, path: Path | str, *, metric: str = "S") -> Path:
    """Write a score histogram (columns model, bin_left, bin_right, count; one step line per model) to ``path``
    (format by suffix) and return ``path``."""
    with saved_figure(path, size=(6.0, 3.5)) as axes:
        for model, group in frame.groupby("model", sort=True):
            edges = [*group["bin_left"], group["bin_right"].iloc[-1]]
            axes.stairs(group["count"].to_numpy(), edges, label=wrapped_label(model, width=32))
        label = inert_label(metric)
        axes.set(xlabel=label, ylabel="items", title=f"Distribution of {label}")
        if len(frame):
            axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), title="model")
    return Path(path)
