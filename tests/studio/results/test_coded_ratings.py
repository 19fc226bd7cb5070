"""``h2h agreement``'s pandas-free path: votes coded by ``votes_table.coded_votes``, the item set by
``choose_coded_items`` and the ratings by ``coded_ratings`` equal what the pandas path (``choose_items``,
``code_ratings``, ``agreement_report``) gives for the same file — or give way to it (``None``) where labels could
read otherwise — and the command then loads neither pandas nor pydantic."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from studio.commands.agreement import agreement_command
from studio.results.agreement import Ratings, agreement_report, choose_items, code_ratings, report_from_ratings
from studio.results.coded_ratings import coded_ratings
from studio.results.item_sets import choose_coded_items
from studio.results.votes_table import CodedVotes, coded_votes, read_string_table


def _random_file(path: Path, rng: random.Random, *, labels: list[str], item_ids: list[str]) -> None:
    """A votes file with two questions, some empty answers, spaces around cells and guarded values."""
    lines = ["question,item,annotator,value"]
    for item in item_ids:
        for annotator in rng.sample([f"r{n}" for n in range(8)], rng.randint(1, 8)):
            for question in ("q", "other"):
                value = "" if rng.random() < 0.1 else rng.choice(labels)
                value = f"'{value}" if value.startswith("-") and rng.random() < 0.5 else value
                lines.append(f"{question}, {item} ,{annotator},{value} ")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _coded(path: Path, level: str) -> CodedVotes:
    table = read_string_table(path)
    assert table is not None
    coded = coded_votes(table, question="q", level=level)
    assert coded is not None
    return coded


def _assert_same_ratings(ours: Ratings, theirs: Ratings) -> None:
    for name in ("items", "annotators", "domain", "item_codes", "annotator_codes", "value_codes", "counts"):
        assert getattr(ours, name).tolist() == getattr(theirs, name).tolist(), name
    assert ours.domain.dtype == theirs.domain.dtype and ours.level == theirs.level


CASES = [
    ("nominal", ["好", "坏", "一般", "A", "b c"], [f"s{n:03d}" for n in range(30)]),
    ("nominal", ["1", "2", "3", "-1"], [str(n) for n in (7, 10, 1, 100, 25, 3)]),  # numbers, ids ordered as numbers
    ("nominal", ["1", "yes", "no"], [f"场景-{n}" for n in range(12)]),  # mixed: labels as text
    ("ordinal", ["1", "2", "3", "4", "5"], [str(n) for n in range(40)]),
    ("interval", ["-2", "0", "3", "10"], [f"i{n}" for n in range(25)]),
    ("ratio", ["1", "2", "04", "8"], [str(n) for n in range(9, 30)]),
]


@pytest.mark.parametrize(("level", "labels", "item_ids"), CASES)
@pytest.mark.parametrize("quota", [None, 1, 3, 6])
def test_the_coded_path_equals_the_pandas_path(
    tmp_path: Path, level: str, labels: list[str], item_ids: list[str], quota: int | None
) -> None:
    path = tmp_path / "votes.csv"
    _random_file(path, random.Random(f"{level}-{quota}"), labels=labels, item_ids=item_ids)
    coded = _coded(path, level)
    frame, pairs = coded.frames()
    rule = "all" if quota is None else "complete"
    chosen, in_set = choose_coded_items(labels=coded.items, pair_items=coded.pair_items, items=rule, quota=quota)
    expected_set = choose_items(pairs, items=rule, quota=quota)
    assert chosen == expected_set
    assert coded.items[in_set].tolist() == sorted(expected_set.items)
    kept = in_set[coded.item_codes]
    ours = coded_ratings(
        level=level,  # type: ignore[arg-type]
        items=coded.items,
        item_codes=coded.item_codes[kept],
        annotators=coded.annotators,
        annotator_codes=coded.annotator_codes[kept],
        values=coded.values,
        value_codes=coded.value_codes[kept],
    )
    assert ours is not None
    _assert_same_ratings(ours, code_ratings(expected_set.select(frame), level=level))  # type: ignore[arg-type]
    report = report_from_ratings(ours, chosen, resamples=200, seed=4)
    assert report == agreement_report(frame, level=level, resamples=200, seed=4, item_set=expected_set)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("level", "rows", "n_items"),
    [
        ("interval", [("a", "x", "1.5"), ("a", "y", "2")], 1),  # a decimal: pandas may parse it otherwise
        ("nominal", [("a", "x", "inf"), ("a", "y", "2")], 1),  # a number to pandas, not an integer
        ("nominal", [("7", "x", "1"), ("07", "y", "2")], 2),  # two ids of one number: ordered by the rows
        ("nominal", [("a", "x", "1e3"), ("b", "y", "2")], 2),
        ("nominal", [("a", "x", ""), ("b", "y", "")], 0),  # no answer at all
    ],
)
def test_labels_that_could_read_otherwise_give_way_to_pandas(
    tmp_path: Path, level: str, rows: list[tuple[str, str, str]], n_items: int
) -> None:
    path = tmp_path / "votes.csv"
    path.write_text("item,annotator,value\n" + "".join(",".join(row) + "\n" for row in rows), encoding="utf-8")
    table = read_string_table(path)
    assert table is not None
    coded = coded_votes(table, question=None, level=level)
    assert coded is not None
    codes = {name: getattr(coded, name) for name in ("items", "item_codes", "annotators", "annotator_codes")}
    assert coded_ratings(level=level, values=coded.values, value_codes=coded.value_codes, **codes) is None  # type: ignore[arg-type]
    # and the command still answers, through pandas
    done = CliRunner().invoke(agreement_command, ["--votes", str(path), "--level", level, "--resamples", "0"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout.splitlines()[-1])["n_items"] == n_items


def test_the_command_prints_the_pandas_path_s_figures_without_loading_pandas(tmp_path: Path) -> None:
    path = tmp_path / "votes.csv"
    _random_file(path, random.Random(2), labels=["1", "2", "3"], item_ids=[str(n) for n in range(50)])
    args = ["--votes", str(path), "--level", "ordinal", "--question", "q", "--quota", "3", "--seed", "9"]
    script = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: print('LOADED=' + ','.join(m for m in ('pandas', 'pydantic') if m in sys.modules)))\n"
        "atexit.register(lambda: print('BLAS=' + os.environ.get('OPENBLAS_NUM_THREADS', '')))\n"
        "from pipeline.cli import main\n"
        f"sys.argv = ['h2h', 'agreement', *{args!r}]\n"
        "main()\n"
    )
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True, env=environment
    )
    printed, blas, loaded = done.stdout.strip().splitlines()
    assert loaded == "LOADED=" and blas == "BLAS=1"  # atexit runs the last registered first
    frame, pairs = _coded(path, "ordinal").frames()
    chosen = choose_items(pairs, items="complete", quota=3)
    expected = agreement_report(frame, level="ordinal", resamples=1000, seed=9, item_set=chosen).to_dict()
    assert json.loads(printed) == {key: expected[key] for key in json.loads(printed)}
    assert json.loads(printed)["quota"] == 3 and json.loads(printed)["alpha_ci"] is not None


def test_help_loads_neither_pandas_nor_numpy() -> None:
    script = (
        "import sys\n"
        "from pipeline.cli import main\n"
        "sys.argv = ['h2h', 'agreement', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED=' + ','.join(m for m in ('pandas', 'numpy', 'pydantic') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert "UTF-8 with BOM, formula-safe" in done.stdout  # the formats are named all the same
    assert done.stdout.strip().splitlines()[-1] == "LOADED="


def test_codes_ignore_other_questions_values(tmp_path: Path) -> None:
    """An interval question's values are checked alone: a free-text question beside it does not send the file to
    the row reader."""
    path = tmp_path / "votes.csv"
    path.write_text("question,item,annotator,value\nq,a,x,1\nq,a,y,3\nnote,a,x,fine\n", encoding="utf-8")
    coded = _coded(path, "interval")
    assert coded.values.tolist() == ["1", "3"] and np.array_equal(coded.value_codes, [0, 1])
