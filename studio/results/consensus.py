"""Crowd decisions that weigh each rater's reliability (ARCHITECTURE.md "Crowd decisions"), beside the majority.

Dawid–Skene and MACE come from Toloka's ``crowd-kit`` (imported when first used: it is a heavy import); nothing here
re-implements their EM. Every method takes long-form votes (``item``, ``annotator``, ``value``: one row per person and
item, for one nominal question) and gives one row per item: ``item``, ``decision``, ``confidence`` (the posterior of
the decision; the majority's share for ``majority``), ``votes``. Under ``majority`` a tie is written ``tie`` (it goes
to experts) and never broken. The majority stays the published decision wherever a workflow asks for the models
``also``; :func:`compare_methods` puts them side by side with a ``models_disagree`` flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

import numpy as np
import pandas as pd

Method = Literal["majority", "dawid_skene", "mace"]
#: The methods, in the workflow's spelling; the CLI accepts ``dawid-skene`` for ``dawid_skene``.
METHODS: tuple[Method, ...] = ("majority", "dawid_skene", "mace")
TIE = "tie"
Fitted = TypeVar("Fitted", pd.DataFrame, pd.Series)
#: crowd-kit's settings, fixed so a rerun gives the same decisions (MACE restarts from a seeded random start).
DAWID_SKENE_ITERATIONS = 100
MACE_SEED = 0
#: MACE's random restarts (crowd-kit's default is 10): each costs a full EM run (~0.9 s on 93,000 votes), and on the
#: simulated crowds of ``benchmarks/bench_crowd.py`` more restarts changed no decision, so one keeps ``h2h consensus``
#: on a campaign's 93,000 votes within its 3 s.
MACE_RESTARTS = 1


def method_name(text: str) -> Method:
    """``dawid-skene`` / ``dawid_skene`` / ``mace`` / ``majority`` → the method; ``ValueError`` naming the choices."""
    name = text.strip().lower().replace("-", "_")
    if name not in METHODS:
        raise ValueError(f"unknown method {text!r}: choose one of majority, dawid-skene, mace")
    return name


def _crowdkit_frame(votes: pd.DataFrame) -> pd.DataFrame:
    frame = votes[["item", "annotator", "value"]].dropna()
    frame = frame[frame["value"].astype(str).str.strip() != ""]
    workers, labels = frame["annotator"].astype(str), frame["value"].astype(str)
    return pd.DataFrame({"task": frame["item"].to_numpy(), "worker": workers, "label": labels})


def majority(votes: pd.DataFrame) -> pd.DataFrame:
    """The most common value per item (``tie`` when two or more lead), its share of the votes, and the votes."""
    frame = _crowdkit_frame(votes)
    tally = frame.groupby(["task", "label"]).size().rename("n").reset_index()
    tally["votes"] = tally.groupby("task")["n"].transform("sum")
    top = tally[tally["n"] == tally.groupby("task")["n"].transform("max")]
    per_item = top.groupby("task").agg(decision=("label", "first"), leaders=("label", "size"), n=("n", "first"))
    per_item["votes"] = top.groupby("task")["votes"].first()
    per_item.loc[per_item["leaders"] > 1, "decision"] = TIE
    per_item["confidence"] = per_item["n"] / per_item["votes"]
    return _rows(per_item)


def _posterior_rows(frame: pd.DataFrame, probas: pd.DataFrame) -> pd.DataFrame:
    per_item = pd.DataFrame(
        {"decision": probas.idxmax(axis=1).astype(str), "confidence": probas.max(axis=1).astype(float)}
    )
    per_item["votes"] = frame.groupby("task").size()
    return _rows(per_item)


def _rows(per_item: pd.DataFrame) -> pd.DataFrame:
    out = per_item.reset_index().rename(columns={"task": "item"})
    out["votes"] = out["votes"].astype(int)
    return out[["item", "decision", "confidence", "votes"]]


def dawid_skene(votes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Dawid–Skene (crowd-kit): per item decision and posterior; per rater reliability — the probability that the
    rater's label is the true one, Σ_label prior(label) · P(rater says label | true label)."""
    from crowdkit.aggregation import DawidSkene

    frame = _crowdkit_frame(votes)
    model = DawidSkene(n_iter=DAWID_SKENE_ITERATIONS).fit(frame)
    priors, errors, probas = _fitted(model.priors_), _fitted(model.errors_), _fitted(model.probas_)
    # errors_: rows (rater, label said), columns the true label; a label a rater never said has no row (0).
    reliability: dict[str, float] = dict.fromkeys(frame["worker"].unique(), 0.0)
    for key, row in errors.iterrows():
        worker, said = str(key[0]), key[1]  # type: ignore[index]
        if said in priors.index:
            reliability[worker] += float(priors[said] * row[said])
    return _posterior_rows(frame, probas), _rater_rows(frame, reliability)


def mace(votes: pd.DataFrame, *, restarts: int = MACE_RESTARTS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """MACE (crowd-kit, seeded): per item decision and posterior; per rater competence — the posterior probability
    that the rater answers by knowing rather than by spamming (MACE's θ). ``restarts``: MACE's random restarts."""
    from crowdkit.aggregation import MACE

    frame = _crowdkit_frame(votes)
    coded, names = _coded(frame)
    model = MACE(n_restarts=restarts, random_state=MACE_SEED).fit(coded)
    probas = _fitted(model.probas_).rename(
        index=dict(enumerate(names["task"])), columns=dict(enumerate(names["label"]))
    )
    competence = {str(name): float(model.spamming_[code, 1]) for code, name in enumerate(names["worker"])}
    return _posterior_rows(frame, probas), _rater_rows(frame, competence)


def _coded(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.Index]]:
    """``frame`` with task, worker and label replaced by integer codes in order of first appearance, and the names.

    Why: crowd-kit's MACE indexes its per-rater and per-label arrays by first appearance (``pandas.factorize``) but
    fills one of them from a ``groupby``, which sorts; with codes the two orders are the same. Integer keys also
    halve its run time.
    """
    coded, names = {}, {}
    for column in ("task", "worker", "label"):
        codes, uniques = pd.factorize(frame[column])
        coded[column], names[column] = codes, pd.Index(uniques)
    return pd.DataFrame(coded), names


def _fitted(attribute: Fitted | None) -> Fitted:
    """A crowd-kit model's fitted attribute (typed optional there, set by ``fit``)."""
    if attribute is None:
        raise RuntimeError("crowd-kit returned a model without its fitted attributes")
    return attribute


def _rater_rows(frame: pd.DataFrame, reliability: dict[str, float]) -> pd.DataFrame:
    votes = frame.groupby("worker").size()
    return pd.DataFrame(
        {
            "annotator": list(reliability),
            "reliability": list(reliability.values()),
            "votes": [int(votes[worker]) for worker in reliability],
        }
    ).sort_values("annotator", ignore_index=True)


def decide(votes: pd.DataFrame, *, method: Method) -> pd.DataFrame:
    """One row per item (``item``, ``decision``, ``confidence``, ``votes``) by ``method``."""
    if method == "majority":
        return majority(votes)
    return (dawid_skene if method == "dawid_skene" else mace)(votes)[0]


def decide_with_raters(votes: pd.DataFrame, *, method: Method) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`decide`'s rows and, from the same fit, one row per rater: ``annotator``, ``reliability``, ``votes``.

    ``reliability`` is the model's estimate (Dawid–Skene: the probability that the rater's label is the true one;
    MACE: competence); under ``majority`` it is the share of the rater's votes that equal the item's majority, over
    the items the majority decides (a ``tie`` item counts for no one; a rater with only such votes gets NaN).
    """
    if method != "majority":
        return (dawid_skene if method == "dawid_skene" else mace)(votes)
    decided = majority(votes)
    frame = _crowdkit_frame(votes)
    frame["decision"] = frame["task"].map(decided.set_index("item")["decision"])
    counted = frame[frame["decision"] != TIE]
    share = (counted["label"] == counted["decision"]).groupby(counted["worker"]).mean()
    return decided, _rater_rows(frame, {str(w): float(share.get(w, np.nan)) for w in frame["worker"].unique()})


def rater_reliability(votes: pd.DataFrame, *, methods: Sequence[Method]) -> pd.DataFrame:
    """One row per rater: ``annotator``, ``votes`` and, per model in ``methods`` (not ``majority``), its estimate
    (``dawid_skene_reliability``, ``mace_competence``)."""
    frame = _crowdkit_frame(votes)
    table = pd.DataFrame({"annotator": sorted(frame["worker"].unique())})
    table["votes"] = table["annotator"].map(frame.groupby("worker").size()).astype(int)
    for method in methods:
        if method == "majority":
            continue
        raters = (dawid_skene if method == "dawid_skene" else mace)(votes)[1]
        column = "dawid_skene_reliability" if method == "dawid_skene" else "mace_competence"
        table[column] = table["annotator"].map(raters.set_index("annotator")["reliability"])
    return table


def compare_methods(votes: pd.DataFrame, *, methods: Sequence[Method]) -> pd.DataFrame:
    """The majority beside each model: per item ``majority``, ``majority_share``, ``{method}`` and
    ``{method}_posterior`` per model, ``votes`` and ``models_disagree`` — True when a model's decision differs from
    the majority's (a majority tie disagrees with any model, which always names a label)."""
    table = majority(votes).rename(columns={"decision": "majority", "confidence": "majority_share"})
    disagree = np.zeros(len(table), dtype=bool)
    for method in methods:
        if method == "majority":
            continue
        decided = decide(votes, method=method).set_index("item")
        table[method] = table["item"].map(decided["decision"])
        table[f"{method}_posterior"] = table["item"].map(decided["confidence"])
        disagree |= (table[method] != table["majority"]).to_numpy()
    table["models_disagree"] = disagree
    return table
