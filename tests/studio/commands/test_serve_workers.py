"""``h2h studio --workers N``: N studio processes on one PostgreSQL store, on ports P … P+N−1 (real processes).

A token signed in for on one process works on the other (next, then submit through the REST API); failed sign-ins
on one refuse on the other; a worker killed is restarted on its port; SIGTERM to the supervisor stops every worker
(no orphan); a SQLite store is refused with the reason. On the old code ``h2h studio`` had no ``--workers`` at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serving import neighbouring_free_ports
from tests.studio.conftest import PASSWORD

H2H = [sys.executable, "-c", "from pipeline.cli import main; main()"]
START_SECONDS = 120
VOTE = {"verdict": "revise", "subtask_label": "dialogue_base"}


def wait_until_up(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, "the supervisor exited while its workers started"
        try:
            if httpx.get(f"{base}/login", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{base} did not answer within {START_SECONDS} s")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has exited


def children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in found]


@pytest.fixture
def two_workers(postgres_url: str, corpus_campaign: str) -> Iterator[tuple[list[str], subprocess.Popen[bytes]]]:
    port = neighbouring_free_ports(2)
    env = {**os.environ, "H2H_DATABASE_URL": postgres_url}
    process = subprocess.Popen([*H2H, "studio", "--workers", "2", "--port", str(port)], env=env)
    bases = [f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"]
    try:
        for base in bases:
            wait_until_up(base, process)
        yield bases, process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def corpus_campaign(campaign: object) -> str:
    """The PostgreSQL store holds the ``vote`` campaign (``tests.studio.conftest``) and people of every role."""
    return "vote"


def api_login(base: str, password: str = PASSWORD, *, address: str | None = None) -> httpx.Response:
    headers = {"X-Forwarded-For": address} if address else {}
    body = {"username": "annotator", "password": password}
    return httpx.post(f"{base}/api/v1/login", json=body, headers=headers, timeout=60)


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_two_workers_share_sign_ins_the_queue_and_the_throttle_and_stop_together(
    two_workers: tuple[list[str], subprocess.Popen[bytes]],
) -> None:
    (first, second), supervisor = two_workers
    token = api_login(first).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    item = httpx.get(f"{second}/api/v1/campaigns/vote/next", headers=auth, timeout=60)
    assert item.status_code == 200, item.text
    leased = item.json()
    again = httpx.get(f"{first}/api/v1/campaigns/vote/next", headers=auth, timeout=60).json()
    assert (again["item_id"], again["lease_id"]) == (leased["item_id"], leased["lease_id"])  # one lease, in the store
    body = {
        "item_id": leased["item_id"],
        "lease_id": leased["lease_id"],
        "submission_id": "s-1",
        "answers": VOTE,
        "seconds_spent": 3.0,
    }
    assert httpx.post(f"{first}/api/v1/campaigns/vote/answers", json=body, headers=auth, timeout=60).status_code == 201
    assert [api_login(first, "wrong").status_code for _ in range(5)] == [401] * 5
    refused = api_login(second)  # the right password, on the other process
    assert refused.status_code == 429, refused.text
    workers = children(supervisor.pid)
    assert len(workers) == 2 and all(alive(pid) for pid in workers)
    os.kill(workers[0], signal.SIGKILL)  # a worker dies: the supervisor starts another on its port
    deadline = time.monotonic() + START_SECONDS
    while len(set(children(supervisor.pid)) - {workers[0]}) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = children(supervisor.pid)
    for base in (first, second):
        wait_until_up(base, supervisor)
    assert httpx.get(f"{first}/api/v1/me", headers=auth, timeout=60).json()["username"] == "annotator"
    assert httpx.get(f"{second}/api/v1/me", headers=auth, timeout=60).json()["username"] == "annotator"
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(timeout=60) == 0
    assert not any(alive(pid) for pid in workers)  # no orphan left serving


def test_several_workers_on_a_sqlite_store_are_refused_with_the_reason(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    done = subprocess.run(
        [*H2H, "studio", "--db", url, "--workers", "2"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2
    assert "--workers 2 needs a PostgreSQL store" in done.stderr
    assert not (tmp_path / "studio.sqlite").exists()  # refused before anything was created
