"""REST load through the shipped nginx config to ``h2h studio --workers 2`` (two processes) on one PostgreSQL store:
20 annotators answer flat out for a bounded time; nothing acknowledged is lost, nothing is doubled, no item goes over
its quota, and both processes served answers (nginx's access log names the process of every request)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.nginx_proxy import team_behind_nginx
from tests.repo import REPO_ROOT

CLIENTS = 20
SECONDS = 8.0


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], ModuleType]]:
    """``load(name)``: ``benchmarks/<name>.py`` imported as a module (the folder is not a package)."""
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    yield importlib.import_module
    for name in ("bench_load", "load_clients", "load_store", "load_faults", "load_proxy", "load_nginx"):
        sys.modules.pop(name, None)


async def answer_flat_out(clients_module: ModuleType, base_url: str, store: Any) -> Any:
    """Log every annotator in through nginx and let them answer without pauses for :data:`SECONDS`."""
    tokens = await clients_module.login_all(base_url, store.usernames, store.password)
    clients = clients_module.open_clients(base_url, tokens)
    try:
        await clients_module.warm_up(clients)
        return await clients_module.run_phase(
            "flat-out",
            clients,
            campaign=store.campaign,
            seconds=SECONDS,
            pause=None,
            noop=False,
            seed=3,
            server_pid=None,
        )
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


@pytest.mark.postgres
@pytest.mark.serial  # a load test: 20 clients and two servers flat out
def test_twenty_annotators_through_nginx_lose_nothing_and_reach_both_processes(
    bench: Callable[[str], ModuleType], postgres_url: str, tmp_path: Path
) -> None:
    store = bench("load_store").prepare_store(
        postgres_url, tmp_path, tag="nginxload", scenarios=120, people_per_item=5, annotators=CLIENTS
    )
    with team_behind_nginx(postgres_url, tmp_path / "team", processes=2, workers=True) as team:
        phase = asyncio.run(answer_flat_out(bench("load_clients"), f"{team.url}/api/v1", store))
        served = team.nginx.upstreams("/api/v1/campaigns/")
        alive = [process.process.poll() is None for process in team.processes]
    integrity = bench("bench_load").check_integrity(store, [phase])
    assert alive == [True]  # the supervisor of h2h studio --workers 2...
    assert "exited" not in (tmp_path / "team" / "studio.log").read_text(errors="replace")  # ...restarted no worker
    assert not phase.errors, phase.errors
    assert phase.cycles > 0 and integrity.acknowledged == phase.cycles
    assert (integrity.lost, integrity.altered, integrity.doubled) == (0, 0, 0), integrity
    assert (integrity.over_quota_items, integrity.count_mismatch_items, integrity.retry_mismatches) == (0, 0, 0)
    assert integrity.stored == integrity.acknowledged + integrity.stored_unacknowledged
    assert integrity.stored_unacknowledged == 0
    ports = {f"127.0.0.1:{port}" for port in team.ports}
    assert set(served) == ports, served  # every answering request went to one of the two processes...
    assert min(served.values()) >= 10, served  # ...and each of them served a share of the answering
