"""JSON Lines reading and crash-safe appending.

Readers report bad input as ``file:line: field: problem`` (:class:`RecordError`) and never skip a
line silently, and never modify the file they read. A pipeline stage reading its own run files may pass
``torn_tail="skip"``: an unparsable last line without its newline (what a kill leaves) is then left out
with a warning. Only appenders repair such a line — when a stage resumes writing the file — so a resumed
stage sees exactly the records that were completely written. Input handed to other commands (``h2h ingest``)
is read with the default ``torn_tail="error"``.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from pipeline.records import UNSTORABLE_TEXT

logger = logging.getLogger(__name__)

RecordT = TypeVar("RecordT", bound=BaseModel)
KeyT = TypeVar("KeyT", bound=Hashable)
#: What a reader does with an unparsable last line that has no newline (a write cut short by a kill).
TornTail = Literal["skip", "error"]
TORN_TAIL_PROBLEM = (
    "incomplete last line (it has no newline and is not valid JSON): a stage killed while writing leaves one; "
    "re-run that stage (it repairs the file and resumes) or remove the line"
)


#: The deepest nesting of lists and objects a line may have. Records nest a few levels (a scenario's history: 3);
#: Python's JSON parser, and every function that walks a record recursively afterwards, fail near 1,000.
MAX_JSON_DEPTH = 64
TOO_DEEP_PROBLEM = f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels of lists and objects)"


class RecordError(ValueError):
    """A problem with one line of one file; ``str()`` gives ``file:line: field: problem``."""

    def __init__(self, path: Path | str, line: int, field: str, problem: str) -> None:
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        super().__init__(f"{path}:{line}: {field}: {problem}")


def validation_problems(path: Path | str, line: int, error: ValidationError) -> list[RecordError]:
    """Turn a pydantic error into one :class:`RecordError` per offending field."""
    problems = []
    for item in error.errors():
        location = list(item["loc"])
        if item["type"] == UNSTORABLE_TEXT:  # raised once per record (cheap); its context names the field
            location.append(item.get("ctx", {}).get("field", ""))
        field = ".".join(str(part) for part in location if part != "") or "(record)"
        problems.append(RecordError(path, line, field, item["msg"]))
    return problems


def nesting_depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar 0, ``[]`` 1, ``[[1]]`` 2), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            current = list(current.values())
        if isinstance(current, list):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_JSON_DEPTH:
                return deepest  # enough to refuse it: the rest need not be walked
            stack.extend((part, depth + 1) for part in current)
    return deepest


def parse_json_line(path: Path | str, line_number: int, text: str) -> dict[str, Any]:
    """Parse one JSONL line into an object, or raise :class:`RecordError` saying why not.

    A line without its newline (only the last can be) that is not valid JSON is reported as a torn last line; a line
    nested deeper than :data:`MAX_JSON_DEPTH` as too deep (never a ``RecursionError``, however deep).
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if not text.endswith("\n"):
            raise RecordError(path, line_number, "(line)", TORN_TAIL_PROBLEM) from exc
        raise RecordError(path, line_number, "(line)", f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    except RecursionError:  # Python's parser recurses per level: a few thousand "[" exhaust the stack
        raise RecordError(path, line_number, "(line)", TOO_DEEP_PROBLEM) from None
    if nesting_depth(value) > MAX_JSON_DEPTH:  # parsed, but deeper than any record and than later code can walk
        raise RecordError(path, line_number, "(line)", TOO_DEEP_PROBLEM)
    if not isinstance(value, dict):
        raise RecordError(path, line_number, "(line)", f"expected a JSON object, got {type(value).__name__}")
    return value


def iter_lines(path: Path | str) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for every non-blank line; line numbers start at 1.

    A UTF-8 byte-order mark before the first line is dropped (editors on Windows write one). A line that is not
    UTF-8 (a file saved as GBK, say) raises :class:`RecordError` naming it, instead of a bare UnicodeDecodeError.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problem = f"not UTF-8 text ({exc.reason} at byte {exc.start + 1}); save the file as UTF-8"
                raise RecordError(path, number, "(line)", problem) from None
            if text.strip():
                yield number, text


def checked_lines(path: Path | str, problems: list[RecordError]) -> Iterator[tuple[int, str]]:
    """:func:`iter_lines` for readers that collect problems: a line that is not UTF-8 is added to ``problems``
    and ends the reading (the rest of such a file is not text either)."""
    try:
        yield from iter_lines(path)
    except RecordError as exc:
        problems.append(exc)


def is_torn_tail(error: RecordError) -> bool:
    """Whether ``error`` reports an incomplete last line (see :data:`TORN_TAIL_PROBLEM`)."""
    return error.problem == TORN_TAIL_PROBLEM


def read_records(path: Path | str, model: type[RecordT], *, torn_tail: TornTail = "error") -> list[RecordT]:
    """Read every line of ``path`` as ``model``; raise the first :class:`RecordError` on bad input.

    ``torn_tail="skip"`` leaves out an incomplete last line with a warning (a run file a stage is still
    writing or was killed writing); the file itself is never changed. Use :func:`check_records` to collect
    every problem of a file instead.
    """
    records = []
    for number, text in iter_lines(path):
        try:
            data = parse_json_line(path, number, text)
        except RecordError as exc:
            if torn_tail == "skip" and is_torn_tail(exc):
                logger.warning("%s; left out of this read", exc)
                continue
            raise
        try:
            records.append(model.model_validate(data))
        except ValidationError as exc:
            raise validation_problems(path, number, exc)[0] from exc
    return records


def validate_lines(path: Path | str, model: type[RecordT]) -> tuple[list[tuple[int, RecordT]], list[RecordError]]:
    """Read every line of ``path`` as ``model``; return ``(line number, record)`` pairs and every problem.

    Nothing is skipped silently: each bad line gives one :class:`RecordError` per offending field.
    """
    records: list[tuple[int, RecordT]] = []
    problems: list[RecordError] = []
    for number, text in checked_lines(path, problems):
        try:
            records.append((number, model.model_validate(parse_json_line(path, number, text))))
        except RecordError as exc:
            problems.append(exc)
        except ValidationError as exc:
            problems.extend(validation_problems(path, number, exc))
    return records, problems


def check_records(path: Path | str, model: type[BaseModel]) -> list[RecordError]:
    """Return every problem in ``path`` read as ``model`` (empty when the file is valid)."""
    return validate_lines(path, model)[1]


@dataclass
class KeyedRecords(Generic[KeyT, RecordT]):
    """The records of one file by key, and what repeated keys the file holds.

    ``records`` keeps each key's first line. ``repeats`` names later lines equal to the first (harmless, but
    reported); ``conflicts`` names later lines that differ from it — the caller must refuse those rather than
    pick one silently.
    """

    records: dict[KeyT, RecordT] = field(default_factory=dict)
    repeats: list[RecordError] = field(default_factory=list)
    conflicts: list[RecordError] = field(default_factory=list)


def index_by_key(
    path: Path | str, numbered: Iterable[tuple[int, RecordT]], key_of: Callable[[RecordT], KeyT]
) -> KeyedRecords[KeyT, RecordT]:
    """Index ``(line number, record)`` pairs by ``key_of(record)``, sorting repeated keys into repeats and
    conflicts (see :class:`KeyedRecords`); each is a :class:`RecordError` on the later line naming the first."""
    keyed: KeyedRecords[KeyT, RecordT] = KeyedRecords()
    first_line: dict[KeyT, int] = {}
    for number, record in numbered:
        key = key_of(record)
        if key not in keyed.records:
            keyed.records[key], first_line[key] = record, number
            continue
        same = keyed.records[key] == record
        problem = f"{key!r} repeats line {first_line[key]}" + (
            " with the same content (ignored)" if same else " with different content"
        )
        (keyed.repeats if same else keyed.conflicts).append(RecordError(path, number, "key", problem))
    return keyed


def repair_torn_tail(path: Path) -> bool:
    """Cut a last line that a kill left without its newline; return whether anything was cut."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return False
        handle.seek(0)
        keep = handle.read().rfind(b"\n") + 1
        handle.truncate(keep)
    logger.warning("%s: dropped a torn last line left by an interrupted run", path)
    return True


class JsonlAppender:
    """Append records to a JSONL file, one fsynced line each; safe to resume after a kill."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_torn_tail(self.path)
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        """Write one record as one line and fsync it."""
        self.extend((record,))

    def extend(self, records: Iterable[BaseModel | dict[str, Any]]) -> None:
        """Write whole lines for ``records``, then flush and fsync once (cheap for large batches)."""
        for record in records:
            data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
            self._handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextmanager
def atomic_target(path: Path | str) -> Iterator[Path]:
    """A temporary file beside ``path`` to write whole, renamed over ``path`` when the block ends without error.

    The name is unique and cannot be mistaken for ``path`` or for another writer's (``.NAME.PID.RANDOM.tmp``: hidden,
    with this process's id), so two writers never share one and a temporary a SIGKILL left behind is never read as
    the output. On any exception, ``KeyboardInterrupt`` and ``SystemExit`` (what the CLI turns SIGTERM into) the
    temporary is removed and ``path`` is left as it was. The caller writes the file and closes it inside the block.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)  # gone already after the rename


def write_records(path: Path | str, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write ``records`` to ``path`` atomically (:func:`atomic_target`); return how many were written."""
    count = 0
    with atomic_target(path) as temporary, open(temporary, "w", encoding="utf-8") as handle:
        for record in records:
            data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
            handle.write(json.dumps(data, ensure_ascii=False) + "\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count
