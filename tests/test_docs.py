"""Documentation that a test keeps true (datasette's habit): the README's configuration table lists exactly the
studio's settings with their defaults, and every ``ARCHITECTURE.md "<Heading>"`` citation in the code, tests and
benchmarks names a section that exists (none cites the out-of-repository DESIGN.md any more)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from studio.settings import Settings
from tests.repo import REPO_ROOT

ROW = re.compile(r"^\| `(H2H_[A-Z0-9_]+)` \| (.+?) \| .+ \|$")


def documented_settings(readme: str) -> dict[str, str]:
    """Variable → default as written, from the table under the README's "### Configuration" heading."""
    section = readme.split("### Configuration", 1)[1].split("\n#", 1)[0]
    return {match.group(1): match.group(2) for line in section.splitlines() if (match := ROW.match(line.strip()))}


def shown_default(value: object) -> str:
    return "unset" if value is None else f"`{value}`"


def test_the_readme_lists_every_setting_with_its_default() -> None:
    documented = documented_settings((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    actual = {f"H2H_{name.upper()}": shown_default(field.default) for name, field in Settings.model_fields.items()}
    assert documented == actual


def test_the_table_reader_finds_rows_and_ignores_prose() -> None:
    readme = "## Intro\n`H2H_X` here\n### Configuration\n\n| variable | default | what |\n|---|---|---|\n"
    readme += "| `H2H_A` | `1` | one |\n| `H2H_B` | unset | two |\n\n## Next\n| `H2H_C` | `3` | three |\n"
    assert documented_settings(readme) == {"H2H_A": "`1`", "H2H_B": "unset"}


# --- Citations of ARCHITECTURE.md ----------------------------------------------------------------------------------

#: The folders whose files may cite ARCHITECTURE.md (code comments, docstrings, benchmark notes).
CITING_FOLDERS = ("pipeline", "studio", "tests", "benchmarks")
#: The kinds of file read for citations: text a person reads, never data or binaries.
CITING_SUFFIXES = frozenset({".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".mako"})
#: This file states the rule and shows broken citations to its checker on purpose, so it is not scanned.
THIS_FILE = Path(__file__).resolve()
#: ``ARCHITECTURE.md "Scores"`` cites a section; ``ARCHITECTURE.md`` alone cites the whole file. A citation may wrap
#: after the file's name, onto a comment line (``#`` or ``#:``) or a docstring line.
CITATION = re.compile(r'ARCHITECTURE\.md(?:(?:[ \t]*\n[ \t]*(?:#:?[ \t]*)?|[ \t]+)"(?P<heading>[^"\n]+)")?')
#: The document every citation used to point to, outside the repository.
OLD_DOCUMENT = "DESIGN.md"


def section_headings(document: str) -> set[str]:
    """The ``## `` headings of a Markdown document, as written after the marks (deeper levels are not sections)."""
    return {line[3:].strip() for line in document.splitlines() if line.startswith("## ")}


def broken_citations(text: str, headings: set[str]) -> list[str]:
    """The headings ``text`` cites as ``ARCHITECTURE.md "<Heading>"`` that are not in ``headings`` (a bare
    ``ARCHITECTURE.md`` cites the file and is never broken)."""
    return [
        match.group("heading")
        for match in CITATION.finditer(text)
        if match.group("heading") is not None and match.group("heading") not in headings
    ]


def citing_files(root: Path = REPO_ROOT) -> Iterator[Path]:
    """Every text file under :data:`CITING_FOLDERS` but this one (caches and hidden folders skipped)."""
    for folder in CITING_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root).parts
            if any(part == "__pycache__" or part.startswith(".") for part in relative):
                continue
            if path.is_file() and path.suffix in CITING_SUFFIXES and path.resolve() != THIS_FILE:
                yield path


def test_every_architecture_citation_names_an_existing_section() -> None:
    headings = section_headings((REPO_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    broken = {
        str(path.relative_to(REPO_ROOT)): found
        for path in citing_files()
        if (found := broken_citations(path.read_text(encoding="utf-8", errors="replace"), headings))
    }
    assert broken == {}, f"headings of ARCHITECTURE.md: {sorted(headings)}"


def test_the_citation_checker_accepts_real_and_bare_citations_and_refuses_others() -> None:
    headings = section_headings("# Title\n\n## Scores\n\ntext\n\n### Detail\n\n## The nevers\n")
    assert headings == {"Scores", "The nevers"}
    assert broken_citations('see ARCHITECTURE.md "Scores" and ARCHITECTURE.md "The nevers"', headings) == []
    assert broken_citations("the map: ARCHITECTURE.md, and ARCHITECTURE.md.", headings) == []
    assert broken_citations('(ARCHITECTURE.md "Sores"), ARCHITECTURE.md "Detail"', headings) == ["Sores", "Detail"]
    # a citation wrapped after the name, in a comment or a docstring, is read whole
    assert broken_citations('# ARCHITECTURE.md\n# "Scores"; ARCHITECTURE.md\n    "Nowhere"', headings) == ["Nowhere"]
    assert broken_citations('#: see ARCHITECTURE.md\n#: "Sores"', headings) == ["Sores"]


def test_the_architecture_map_has_the_sections_code_cites() -> None:
    headings = section_headings((REPO_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    cited_by_code = {"The benchmark", "Scores", "Human evaluation", "Rules every workflow obeys", "Scale", "Layers"}
    assert cited_by_code <= headings


def test_no_file_cites_the_design_document_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(REPO_ROOT))
        for path in citing_files()
        if OLD_DOCUMENT in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert citing == [], f"cite ARCHITECTURE.md instead of {OLD_DOCUMENT} in: {citing}"


#: A path to a file of the repository as code and docs cite it: ``tests/studio/web/test_api.py``, ``studio/rules.py``,
#: ``pipeline/scoring/combine.py`` (a path whose last part has no ``.py`` is a folder or prose and is not checked).
CITED_PATH = re.compile(r"(?<![\w./-])((?:tests|studio|pipeline|benchmarks)/[\w/]+\.py)\b")


#: Paths that name a file of a made-up tree a test builds, not a file of this repository.
MADE_UP_PATHS = frozenset({"studio/listing.py"})  # tests/pipeline/test_metric_names.py's scanner test


def missing_cited_paths(text: str, root: Path = REPO_ROOT) -> list[str]:
    """The ``.py`` paths ``text`` cites that are not files under ``root`` (:data:`MADE_UP_PATHS` aside)."""
    found = set(CITED_PATH.findall(text)) - MADE_UP_PATHS
    return sorted(path for path in found if not (root / path).is_file())


def test_the_path_checker_finds_cited_files_and_only_those(tmp_path: Path) -> None:
    (tmp_path / "tests" / "studio").mkdir(parents=True)
    (tmp_path / "tests" / "studio" / "test_real.py").write_text("", encoding="utf-8")
    text = "see tests/studio/test_real.py and tests/studio/test_gone.py; not x/tests/a.py nor studio/web/ (a folder)"
    assert missing_cited_paths(text, tmp_path) == ["tests/studio/test_gone.py"]


def test_every_python_file_the_docs_and_code_cite_exists() -> None:
    """A moved or renamed module or test leaves no citation pointing at nothing (one comment cited a test file
    that never existed)."""
    documents = [REPO_ROOT / "README.md", REPO_ROOT / "ARCHITECTURE.md", *citing_files()]
    missing = {
        str(path.relative_to(REPO_ROOT)): found
        for path in documents
        if (found := missing_cited_paths(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert missing == {}
