"""The engine tier: the real vLLM (vllm-cpu on this machine), Ray and FlagEmbedding on tiny models.

It runs in its own virtualenv (``tests/run.sh`` builds it from ``tests/engines/requirements.txt`` and runs this
folder with it, with ``H2H_ENGINE_TIER=1``). Elsewhere — the main virtualenv, where vllm is not installed — the
folder is not collected. When it is collected, a missing engine skips, and under ``CI=true`` fails.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

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
