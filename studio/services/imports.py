"""Scenario files uploaded through the admin page or API: staged privately, checked whole, stored on confirmation.

An upload is one or more ``.jsonl`` files: our scenario format, or files of the public H2HTalk release (named after
their subtask, lines of ``{"response": ...}``; ``pipeline.dataset.import_upstream`` reads them: file name → subtask,
line number → stable id). :func:`stage` moves them out of wherever the front door received them (Gradio's upload
cache, a spooled request body) into a fresh private directory (``tempfile.mkdtemp``: mode 0700) and deletes the
original; :func:`read_staged` checks every line with the validators ``h2h validate`` uses and reports every problem
as ``file:line: field: problem`` under the name the person gave the file. The files are only ever parsed as JSON:
never executed, never served back, never rendered as HTML. :func:`discard` deletes a staging directory; directories
left behind (an abandoned page) are removed after :data:`KEEP_SECONDS` by the next :func:`stage`.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.dataset import UPSTREAM_FILE_SUBTASKS, import_upstream, validate_file
from pipeline.jsonl import RecordError, checked_lines, parse_json_line, validate_lines
from pipeline.records import Scenario
from studio.errors import InvalidInput
from studio.services.ingest import name_problems

STAGING_PREFIX = "h2h-import-"
KEEP_SECONDS = 3600.0
MAX_FILES = 50
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class UploadedFile:
    """A file as a front door received it: the name the person gave it, and where its bytes are now."""

    name: str
    path: Path


@dataclass(frozen=True)
class StagedImport:
    """An upload in its private directory, owned by the person who sent it (only they may store it): files of our
    scenario format in ``scenarios/``, public-release files in ``release/``."""

    directory: Path
    owner: str
    scenario_files: tuple[str, ...]
    release_files: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.scenario_files, *self.release_files)

    @property
    def scenarios_dir(self) -> Path:
        return self.directory / "scenarios"

    @property
    def release_dir(self) -> Path:
        return self.directory / "release"


@dataclass
class ReadImport:
    """What the staged files hold: the scenarios (file and line order), every problem, per-file notes."""

    scenarios: list[Scenario] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Where each scenario id was read (``file:line``), to name both lines of an id two files share.
    origins: dict[str, str] = field(default_factory=dict)

    def add(self, scenario: Scenario, origin: str) -> None:
        """Take ``scenario`` read at ``origin``, or report it when an earlier file already gave its id."""
        first = self.origins.setdefault(scenario.id, origin)
        if first != origin:
            self.problems.append(f"{origin}: id: {scenario.id!r} is also on {first} (another uploaded file)")
            return
        self.scenarios.append(scenario)


def stored_name(name: str) -> str:
    """The file's name in the staging directory: its last path part, reduced to letters, digits, ``.``, ``_``, ``-``
    (the client's name never becomes a path)."""
    base = re.split(r"[\\/]", name or "")[-1]
    cleaned = _SAFE_NAME.sub("_", base).strip("._")[:100]
    return cleaned or "upload.jsonl"


def _remove_stale(root: Path, keep_seconds: float) -> None:
    cutoff = time.time() - keep_seconds
    for old in root.glob(STAGING_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)


def _check_upload(files: list[UploadedFile], limit_bytes: int) -> list[str]:
    if not files:
        raise InvalidInput("files: choose one or more .jsonl files")
    if len(files) > MAX_FILES:
        raise InvalidInput(f"files: at most {MAX_FILES} files at once")
    names = [stored_name(upload.name) for upload in files]
    for name in names:
        if not name.endswith(".jsonl"):
            raise InvalidInput(f"files: {name!r} is not a .jsonl file (scenario files are JSON Lines)")
    if len(set(names)) != len(names):
        raise InvalidInput("files: two files have the same name")
    total = sum(upload.path.stat().st_size for upload in files)
    if total > limit_bytes:
        raise InvalidInput(f"files: {total} bytes in all; the limit is {limit_bytes} bytes (H2H_MAX_UPLOAD_BYTES)")
    return names


def stage(files: list[UploadedFile], *, owner: str, limit_bytes: int, root: Path | None = None) -> StagedImport:
    """Move ``files`` into a fresh private directory under ``root`` (default: the system's temporary directory);
    ``InvalidInput`` for no files, too many, a name that is not ``.jsonl`` or more than ``limit_bytes`` in all.

    The received copies are deleted whether or not staging succeeds.
    """
    try:
        names = _check_upload(files, limit_bytes)
        parent = root or Path(tempfile.gettempdir())
        _remove_stale(parent, KEEP_SECONDS)
        directory = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))
        kinds: dict[str, list[str]] = {"scenarios": [], "release": []}
        for upload, name in zip(files, names, strict=True):
            kind = "release" if is_release_file(upload.path, name) else "scenarios"
            (directory / kind).mkdir(exist_ok=True)
            shutil.copyfile(upload.path, directory / kind / name)  # a copy, never a link to a path the client chose
            kinds[kind].append(name)
        return StagedImport(directory, owner, tuple(kinds["scenarios"]), tuple(kinds["release"]))
    finally:
        for upload in files:
            with contextlib.suppress(OSError):
                upload.path.unlink()


def discard(staged: StagedImport | None) -> None:
    """Delete the staging directory (nothing happens when it is already gone)."""
    if staged is not None:
        shutil.rmtree(staged.directory, ignore_errors=True)


def _shown(problem: RecordError, names: dict[str, str]) -> str:
    """``file:line: field: problem`` with the file named as the person named it, never by its staging path."""
    name = names.get(problem.path, Path(problem.path).name)
    return f"{name}:{problem.line}: {problem.field}: {problem.problem}"


def is_release_file(path: Path, name: str) -> bool:
    """Whether the file at ``path`` called ``name`` looks like a public-release file: named after a subtask, its first
    record without an ``id`` (our scenario format requires one)."""
    if name.removesuffix(".jsonl") not in UPSTREAM_FILE_SUBTASKS:
        return False
    for number, text in checked_lines(path, []):
        try:
            return "id" not in parse_json_line(path, number, text)
        except RecordError:
            continue
    return True


def _read_release(staged: StagedImport, found: ReadImport, names: dict[str, str]) -> None:
    result = import_upstream(staged.release_dir)
    found.problems.extend(_shown(problem, names) for problem in result.problems)
    for scenario in result.scenarios:
        found.add(scenario, str(scenario.source).removeprefix("upstream:"))  # source: "upstream:<file>:<line>"
    for summary in result.files:
        found.notes.append(f"{summary.path.name}: public release, {summary.subtask}, {summary.imported} scenario(s)")
        found.notes.extend(f"{summary.path.name}: {warning}" for warning in summary.warnings)


def _read_scenario_file(path: Path, name: str, found: ReadImport, names: dict[str, str]) -> None:
    check = validate_file(path, "scenarios")
    found.problems.extend(_shown(problem, names) for problem in check.problems)
    if check.ok:
        numbered = validate_lines(path, Scenario)[0]
        unnamed = name_problems(path, numbered)  # an id holding a character nobody can see, as h2h ingest refuses it
        found.problems.extend(_shown(problem, names) for problem in unnamed)
        for number, scenario in numbered if not unnamed else []:
            found.add(scenario, f"{name}:{number}")
        found.notes.append(f"{name}: scenario format, {check.records} scenario(s)")


def read_staged(staged: StagedImport) -> ReadImport:
    """Every scenario of the staged files and every problem (``file:line: field: problem``), nothing stored."""
    found = ReadImport()
    names = {str(staged.scenarios_dir / name): name for name in staged.scenario_files}
    names |= {str(staged.release_dir / name): name for name in staged.release_files}
    for name in staged.scenario_files:
        _read_scenario_file(staged.scenarios_dir / name, name, found, names)
    if staged.release_files:
        _read_release(staged, found, names)
    if not found.problems and not found.scenarios:
        found.problems.append("(files): (file): the files hold no scenarios")
    return found
