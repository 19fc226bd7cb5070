"""Writers stopped midway (issue 18, item 10): an error, Ctrl-C or SIGTERM during ``h2h export`` leaves the output
as it was and no temporary beside it (before the fix, ``OUT.tmp`` was left behind).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from pipeline.jsonl import atomic_target, write_records
from tests.repo import REPO_ROOT

# --- 4. an export stopped midway ------------------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_a_writer_stopped_by_an_error_or_ctrl_c_leaves_the_output_as_it_was_and_no_temporary(tmp_path: Path) -> None:
    output = tmp_path / "votes.jsonl"
    output.write_text("the export before\n", encoding="utf-8")

    def records(stop: BaseException) -> Iterator[dict[str, Any]]:
        yield {"row": 1}
        raise stop

    for stop in (RuntimeError("the store went away"), KeyboardInterrupt()):
        with pytest.raises(type(stop)):
            write_records(output, records(stop))
        assert output.read_text(encoding="utf-8") == "the export before\n" and leftovers(tmp_path) == []
    with atomic_target(output) as temporary:
        assert temporary.parent == output.parent and temporary.name.startswith(".votes.jsonl.")
        assert temporary.name != output.name + ".tmp" and str(os.getpid()) in temporary.name
        temporary.write_text("new\n", encoding="utf-8")
    assert output.read_text(encoding="utf-8") == "new\n" and leftovers(tmp_path) == []


#: ``h2h export votes`` as the console script runs it, its rows held after the first one until SIGTERM arrives (the
#: only change: the store's rows come slowly, so the signal lands while the file is being written).
SLOW_EXPORT = textwrap.dedent(
    """
    import sys, time
    import studio.services.votes_export as exports

    real_rows = exports.vote_rows

    def slow_rows(*args, **kwargs):
        for number, row in enumerate(real_rows(*args, **kwargs)):
            yield row
            if number == 0:
                print("WRITING", flush=True)
                time.sleep(60)

    exports.vote_rows = slow_rows
    from pipeline.cli import main
    sys.argv = ["h2h", *sys.argv[1:]]
    main()
    """
)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_export_stopped_by_sigterm_leaves_the_output_as_it_was_and_no_temporary(
    voted: Engine, db_url: str, tmp_path: Path, suffix: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    output = folder / f"votes{suffix}"
    output.write_bytes(b"the export before\n")
    command = [sys.executable, "-c", SLOW_EXPORT, "export", "votes", "--campaign", "vote", "-o", str(output)]
    process = subprocess.Popen(
        [*command, "--db", db_url], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "WRITING"
        deadline = time.monotonic() + 10
        while not leftovers(folder) and time.monotonic() < deadline:  # the first row is on its way to the disk
            time.sleep(0.05)
        [temporary] = leftovers(folder)
        assert temporary.startswith(f".votes{suffix}.{process.pid}.")
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "the output file was left as it was" in err
    assert output.read_bytes() == b"the export before\n" and leftovers(folder) == []
