"""The engine tier: the real vLLM (vllm-cpu on this machine), Ray and FlagEmbedding on tiny models.

It runs in its own virtualenv (``tests/run.sh`` builds it from ``tests/engines/requirements.txt`` and runs this
folder with it, with ``H2H_ENGINE_TIER=1``). Elsewhere — the main virtualenv, where vllm is not installed — the
folder is not collected. When it is collected, a missing engine skips, and under ``CI=true`` fails.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.requirements import require

ENGINE_PACKAGES = ("vllm", "ray", "FlagEmbedding")


def _engine_tier() -> bool:
    return os.environ.get("H2H_ENGINE_TIER") == "1" or importlib.util.find_spec("vllm") is not None


if not _engine_tier():
    collect_ignore_glob = ["test_*.py"]

# Bounded and offline: 1 GiB of KV cache per engine, no usage reports, no hub.
for _name, _value in {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def engines() -> None:
    """Require the engine packages in this interpreter (skip, or under CI fail, naming what is missing)."""
    missing = [name for name in ENGINE_PACKAGES if importlib.util.find_spec(name) is None]
    require(not missing, f"the engine tier needs {', '.join(missing)}: run it through bash tests/run.sh")


@pytest.fixture(scope="session")
def tiny(engines: None) -> Iterator[object]:
    """The tiny chat model and embedder (built once, cached under ~/.cache/h2h-studio/tiny-models)."""
    from pipeline.tinymodels import cached_tiny_models

    yield cached_tiny_models()


@pytest.fixture(scope="session", autouse=True)
def no_engine_outlives_the_tests() -> Iterator[None]:
    """After the tier, every session a test started must be empty; leftovers are killed and reported."""
    from tests.engines.processes import SESSIONS, kill_session, wait_until_gone

    yield
    leftovers = {session: wait_until_gone(session, seconds=30) for session in SESSIONS}
    leftovers = {session: processes for session, processes in leftovers.items() if processes}
    for session in leftovers:
        kill_session(session)
    pids = {session: [process.pid for process in processes] for session, processes in leftovers.items()}
    assert not leftovers, f"processes outlived the engine tests (killed now), by session: {pids}"


@pytest.fixture(scope="session")
def demo_scenarios() -> Path:
    from pipeline.paths import demo_dir

    return demo_dir() / "scenarios.jsonl"


#: The name ``vllm serve`` serves the tiny chat model under.
SERVED_NAME = "tiny-chat"


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def vllm_server(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``vllm serve`` (its own session) until the module ends; yields the ``/v1`` base URL. Module-scoped: each
    module that uses it starts its own server, so no engine outlives the tests that need it.

    Started as ``python -m vllm.entrypoints.launchers.api_server.entry`` — the server ``vllm serve`` starts: the
    ``vllm`` command of vllm-cpu 0.32.0 fails before parsing its arguments (it asks for the version of a package
    named ``vllm``; the CPU build is installed as ``vllm-cpu``).
    """
    from tests.engines.processes import kill_session, spawn, wait_until_gone

    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "vllm-serve.log"
    command = [
        sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", str(tiny.chat),
        "--host", "127.0.0.1",
        "--port", str(port), "--served-model-name", SERVED_NAME, "--max-model-len", "8192",
        "--no-enable-chunked-prefill",  # seeded requests crash vllm-cpu under chunked prefill
    ]  # fmt: skip
    server = spawn(command, log=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 400
    try:
        while True:
            if server.poll() is not None:
                pytest.fail(f"vllm serve exited with {server.returncode}:\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"vllm serve did not answer within 400 s:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        yield f"{base}/v1"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)  # the API server shuts its engine down on SIGTERM
        if wait_until_gone(server.pid, seconds=30):
            kill_session(server.pid)
        assert not wait_until_gone(server.pid, seconds=10)
