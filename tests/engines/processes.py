"""Engine processes for tests: each command in its own session, so that it and everything it spawns (vLLM's
engine core and workers, a Ray cluster) can be found, killed, and proven gone."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from tests.repo import REPO_ROOT

#: Every session id this test run started (one per spawned command).
SESSIONS: list[int] = []


def h2h_command(*arguments: str) -> list[str]:
    """``h2h ARGS`` run by this interpreter (``python -m pipeline.cli`` keeps the ``__main__`` idiom vLLM needs)."""
    return [sys.executable, "-m", "pipeline.cli", *arguments]


def spawn(command: Sequence[str], *, log: Path, cwd: Path = REPO_ROOT) -> subprocess.Popen[bytes]:
    """Start ``command`` in a new session with stdout and stderr going to ``log``."""
    stream = log.open("wb")
    process = subprocess.Popen(list(command), cwd=cwd, stdout=stream, stderr=subprocess.STDOUT, start_new_session=True)
    stream.close()
    SESSIONS.append(process.pid)  # a new session's id is its leader's pid
    return process


def run(command: Sequence[str], *, log: Path, timeout: float) -> tuple[int, str]:
    """Run ``command`` to the end (killing its session after ``timeout`` s); return its exit code and output."""
    process = spawn(command, log=log)
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(process.pid)
        raise
    return code, log.read_text(encoding="utf-8", errors="replace")


def session_members(session: int) -> list[psutil.Process]:
    """The live processes of a session (any that vLLM or Ray left behind after its leader exited)."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == session and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (ProcessLookupError, psutil.Error, PermissionError):
            continue
    return members


def kill_session(session: int) -> None:
    """SIGKILL every process of ``session`` (the command, its engine core, its workers)."""
    for process in session_members(session):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)


def wait_until_gone(session: int, *, seconds: float) -> list[psutil.Process]:
    """Wait up to ``seconds`` for a session to empty; return what is still there."""
    deadline = time.monotonic() + seconds
    while (left := session_members(session)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
