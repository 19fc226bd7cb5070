"""The repository's top level as the project was specified: ``annotation_schemas/`` (the workflows) and ``data/``
(prompts, SAP block, rubric, demo data, curation lexicons) are one copy each at the top, and the installed package reads
exactly those files.

``pyproject.toml`` lists every package by hand (package discovery cannot map a top-level folder into a package), so
one test keeps that list equal to the package folders on disk: a new subpackage that is not listed fails here instead
of going missing from the wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.repo import REPO_ROOT

MAPPED = {"studio.annotation_schemas": "annotation_schemas", "pipeline.data": "data"}


def package_folders() -> set[str]:
    """Every folder of ``pipeline/`` and ``studio/`` with an ``__init__.py``, as a dotted package name."""
    return {
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for code in ("pipeline", "studio")
        for init in (REPO_ROOT / code).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_pyproject_lists_every_package_and_maps_the_two_top_level_data_folders() -> None:
    setuptools = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert set(setuptools["packages"]) == package_folders() | set(MAPPED)
    assert setuptools["package-dir"] == MAPPED
    for folder in MAPPED.values():
        assert (REPO_ROOT / folder / "__init__.py").is_file()


def test_there_is_one_copy_of_the_workflows_and_of_the_data() -> None:
    assert sorted(path.name for path in (REPO_ROOT / "annotation_schemas").glob("*.yaml"))
    assert not list((REPO_ROOT / "studio").rglob("*.yaml"))
    assert {path.name for path in (REPO_ROOT / "data").iterdir() if path.is_dir() and path.name != "__pycache__"} == {
        "curation",
        "demo",
        "live",
        "prompts",
    }
    assert not (REPO_ROOT / "pipeline" / "resources").exists()
    data_code = [path for path in (REPO_ROOT / "data").rglob("*.py") if path.name != "__init__.py"]
    assert not data_code, f"code shipped as data: {data_code}"


def test_the_checkout_reads_the_top_level_folders() -> None:
    from pipeline.paths import bundled_resources
    from studio.workflows import default_schemas_dir

    assert default_schemas_dir().resolve() == REPO_ROOT / "annotation_schemas"
    assert bundled_resources().resolve() == REPO_ROOT / "data"


@pytest.mark.xdist_group("wheel")
def test_an_installed_copy_reads_the_top_level_yaml_it_was_built_from(tmp_path: Path) -> None:
    """Edit a workflow at the top of a copy of the sources, install that copy (not editable) into a folder, and
    the installed studio loads the edited title: the YAML at the top level is what ships and what is read."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "pipeline", "studio", "annotation_schemas", "data"):
        original = REPO_ROOT / name
        if original.is_dir():
            shutil.copytree(original, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(original, source / name)
    workflow = source / "annotation_schemas" / "crowd_vote.yaml"
    text = workflow.read_text(encoding="utf-8")
    assert "\ntitle: " in text
    workflow.write_text(text.replace("\ntitle: ", "\ntitle: EDITED AT THE TOP LEVEL ", 1), encoding="utf-8")
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, "--no-build-isolation", "--target", str(target), str(source)], check=True)
    probe = (
        "import studio; from studio.workflows import load_schemas; "
        "print(studio.__file__); print(load_schemas()['crowd_vote'].title)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    where, title = shown.stdout.splitlines()
    assert Path(where).is_relative_to(target)
    assert title.startswith("EDITED AT THE TOP LEVEL ")
