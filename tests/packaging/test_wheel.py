"""The package as a user installs it: a wheel built from the sources, installed (not editable) into a fresh venv, run
from an empty directory — once with the pipeline's dependencies only and once with the ``[studio]`` extra.

What this proves: the wheel carries its code, its data (prompts, SAP, rubric, demo data, workflow YAML, migrations)
and its entry points (the ``h2h`` script and the studio's ``h2h.commands`` plugin), and the dependency lists in its
metadata are enough: each venv sees exactly the distributions its requirements reach (the wheel's ``Requires-Dist``
for the chosen extras, followed through every dependency's own metadata), linked from this test run's environment
instead of downloaded — the registry is not what is under test, and a real ``pip install`` of torch takes minutes.
A pipeline-only install has no SQLAlchemy, FastAPI or Gradio, and ``h2h studio`` says how to add them.

Both tests share one wheel: they form one xdist group (``--dist loadgroup`` runs them on one worker, beside the rest).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.repo import REPO_ROOT

pytestmark = pytest.mark.xdist_group("wheel")

PROJECT = "h2htalk-studio"
SOURCES = ("pyproject.toml", "README.md", "pipeline", "studio", "annotation_schemas", "data")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built (no build isolation, nothing downloaded) from a copy of the sources, so the checkout gets no
    ``build/`` or ``*.egg-info`` of it."""
    folder = tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        source, target = REPO_ROOT / name, folder / "src" / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--no-index", "-q", "-w", str(folder / "dist"), str(folder / "src")], check=True)
    (built,) = (folder / "dist").glob("h2htalk_studio-*.whl")
    return built


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` lines of the wheel's own metadata."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers = Parser().parsestr(archive.read(name).decode("utf-8"))
    return [Requirement(line) for line in headers.get_all("Requires-Dist") or []]


def applies(requirement: Requirement, extras: set[str]) -> bool:
    """Whether ``requirement`` is wanted on this machine with ``extras`` chosen."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras | {""})


def reachable(wheel: Path, extras: set[str]) -> list[metadata.Distribution]:
    """The installed distributions the wheel's requirements with ``extras`` reach, transitively (a self-reference
    such as ``h2htalk-studio[minilm]`` adds its extras)."""
    own = wheel_requirements(wheel)
    wanted: dict[str, set[str]] = {}
    todo = [(requirement, set(extras)) for requirement in own]
    while todo:
        requirement, chosen = todo.pop()
        if not applies(requirement, chosen):
            continue
        name, more = canonicalize_name(requirement.name), set(requirement.extras)
        if name == canonicalize_name(PROJECT):
            todo.extend((own_requirement, more) for own_requirement in own)
            continue
        if name in wanted and more <= wanted[name]:
            continue
        wanted[name] = wanted.get(name, set()) | more
        dependency = metadata.distribution(name)  # PackageNotFoundError: the test environment lacks a requirement
        todo.extend((Requirement(line), wanted[name]) for line in dependency.requires or [])
    return [metadata.distribution(name) for name in sorted(wanted)]


def top_level_entries(distribution: metadata.Distribution) -> set[str]:
    """The first path parts of a distribution's installed files (packages, modules, ``*.libs``, its dist-info)."""
    entries = set()
    for file in distribution.files or []:
        first = file.parts[0]
        if first not in ("..", "__pycache__") and not first.endswith(".pth"):
            entries.add(first)
    return entries


def install(wheel: Path, root: Path, extras: set[str]) -> Path:
    """A fresh venv (no pip, no system site-packages) with the wheel installed, not editable, and a folder of links
    to exactly the distributions its requirements reach on its path. Returns the venv's ``bin``."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python), "install", "-q"]
    subprocess.run([*pip, "--no-deps", "--no-index", str(wheel)], check=True)
    linked = root / "dependencies"
    linked.mkdir()
    for distribution in reachable(wheel, extras):
        base = Path(str(distribution.locate_file("")))
        for entry in top_level_entries(distribution):
            if not (linked / entry).exists() and (base / entry).exists():
                (linked / entry).symlink_to(base / entry)
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    (site_packages / "dependencies.pth").write_text(f"{linked}\n", encoding="utf-8")
    return venv / "bin"


def run(command: list[str], cwd: Path, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run in ``cwd`` with no PYTHONPATH, no H2H_* settings and the model hub offline."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("H2H_")
    }
    environment |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "empty"
    folder.mkdir()
    yield folder


def test_a_pipeline_only_install_runs_the_pipeline_and_explains_the_studio(
    wheel: Path, tmp_path: Path, empty: Path
) -> None:
    bin_dir = install(wheel, tmp_path, set())
    where = run([str(bin_dir / "python"), "-c", "import pipeline, sqlalchemy"], empty)
    assert "No module named 'sqlalchemy'" in where.stderr  # the studio's dependencies really are absent
    helped = run([str(bin_dir / "h2h"), "--help"], empty)
    assert helped.returncode == 0, helped.stderr
    assert "leaderboard" in helped.stdout and "needs the studio" in helped.stdout
    for args in (["studio", "--db", "sqlite:///x.sqlite"], ["demo", "--no-serve"], ["export", "votes", "--help"]):
        refused = run([str(bin_dir / "h2h"), *args], empty)
        assert refused.returncode == 1, refused.stderr
        assert "pip install 'h2htalk-studio[studio]'" in refused.stderr and "Traceback" not in refused.stderr
    run_dir = empty / "run"
    run_dir.mkdir()
    demo = REPO_ROOT / "data" / "demo"
    for name in ("scenarios.jsonl", "responses.jsonl"):
        shutil.copyfile(demo / name, run_dir / name)
    for args in (
        ["score", "--run", "run", "--embedder", "none"],
        ["judge", "--run", "run", "--no-judge"],
        ["leaderboard", "--scores", "run/results.jsonl", "--variant", "with_sap"],
    ):
        done = run([str(bin_dir / "h2h"), *args], empty)
        assert done.returncode == 0, (args, done.stderr)
    assert "demo-warm-companion" in done.stdout and "pending" in done.stderr  # no SS without an embedder: S pending
    assert list(empty.iterdir()) == [run_dir]


def test_the_wheel_ships_the_top_level_data_folders_inside_the_packages_that_read_them(wheel: Path) -> None:
    """``annotation_schemas/`` and ``data/`` (one copy each, at the top of the repository) arrive as the packages
    ``studio.annotation_schemas`` and ``pipeline.data``, never as top-level packages of their own (a top-level ``data``
    would clash with anything else installed under that name), and the demo builder ships as code, not data."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for schema in sorted((REPO_ROOT / "annotation_schemas").glob("*.yaml")):
        assert f"studio/annotation_schemas/{schema.name}" in names
    for data_file in sorted((REPO_ROOT / "data").rglob("*")):
        if data_file.is_file() and "__pycache__" not in data_file.parts:
            assert f"pipeline/data/{data_file.relative_to(REPO_ROOT / 'data').as_posix()}" in names
    assert "pipeline/demo_responses.py" in names
    assert not {name.split("/")[0] for name in names} & {"data", "annotation_schemas", "tests", "benchmarks"}


def test_the_wheel_with_the_studio_extra_runs_the_demo_from_an_empty_directory(
    wheel: Path, tmp_path: Path, empty: Path
) -> None:
    bin_dir = install(wheel, tmp_path, {"studio"})
    located = run(
        [str(bin_dir / "python"), "-c", "import pipeline, studio; print(pipeline.__file__, studio.__file__)"], empty
    )
    assert located.returncode == 0, located.stderr
    assert all(Path(path).is_relative_to(tmp_path / "venv") for path in located.stdout.split())  # not the checkout
    done = run([str(bin_dir / "h2h"), "demo", "--no-serve", "--annotators", "2"], empty, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "researcher / researcher-demo / researcher" in done.stdout
    assert (empty / "h2h-demo" / "studio.sqlite").stat().st_size > 0
    scored = (empty / "h2h-demo" / "run" / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(scored) == 402 and '"embedder":"minilm' in scored[0].replace(" ", "")
    board = run([str(bin_dir / "h2h"), "export", "leaderboard", "--variant", "with_sap", "-o", "t.csv",
                 "--db", "sqlite:///h2h-demo/studio.sqlite"], empty)  # fmt: skip
    assert board.returncode == 0, board.stderr
    assert "itinerary_basic" in board.stderr  # every itinerary I–III item awaits adjudication: pending
