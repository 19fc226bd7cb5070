"""The vLLM backend's pure parts (sharding, order, batching, sampling) and its clear missing-vllm error.

vllm and ray are not installed in CI. The data-parallel path is driven through small stand-ins of
the two third-party libraries (installed into ``sys.modules`` for one test), which is what lets CI
check that shards go to separate workers and come back in input order.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest

from pipeline.generation.base import BackendUnavailable, Completion, GenerationRequest, RequestFailure, SamplingParams
from pipeline.generation.vllm_backend import (
    INSTALL_HINT,
    VLLMBackend,
    batches,
    gather,
    sampling_kwargs,
    shard,
    shard_bounds,
)


def make_requests(count: int) -> list[GenerationRequest]:
    sampling = SamplingParams(temperature=0.5, top_p=0.8, max_tokens=32, seed=11)
    return [
        GenerationRequest((f"s{i}", "org/model", "with_sap"), [{"role": "user", "content": f"q{i}"}], sampling)
        for i in range(count)
    ]


def test_shards_are_contiguous_balanced_and_deterministic() -> None:
    assert shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_bounds(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    for count in range(0, 40):
        for shards in range(1, 9):
            items = list(range(count))
            parts = shard(items, shards)
            assert len(parts) == shards
            assert max(map(len, parts)) - min(map(len, parts)) <= 1
            assert gather(parts) == items
            assert shard(items, shards) == parts
    with pytest.raises(ValueError, match="at least 1"):
        shard_bounds(3, 0)


def test_batches_keep_order() -> None:
    assert list(batches(list("abcdefg"), 3)) == [["a", "b", "c"], ["d", "e", "f"], ["g"]]
    assert list(batches([], 3)) == []
    with pytest.raises(ValueError, match="batch size must be at least 1, got 0"):
        list(batches([1], 0))


def test_sampling_params_map_to_vllm_keywords() -> None:
    sampling = SamplingParams(temperature=0.0, top_p=0.95, max_tokens=300, seed=42)
    assert sampling_kwargs(sampling) == {"temperature": 0.0, "top_p": 0.95, "max_tokens": 300, "seed": 42}
    assert sampling.as_record() == {"temperature": 0.0, "top_p": 0.95, "max_tokens": 300, "seed": 42}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_gives_a_clear_error() -> None:
    backend = VLLMBackend(model="some/model")
    with pytest.raises(BackendUnavailable) as caught:
        list(backend.generate(make_requests(2)))
    assert INSTALL_HINT in str(caught.value)
    assert "pip install '.[vllm]' on a GPU machine" in str(caught.value)


class _Output:
    def __init__(self, text: str) -> None:
        self.text, self.token_ids = text, list(range(len(text)))


class _RequestOutput:
    def __init__(self, prompt: str, text: str) -> None:
        self.prompt_token_ids = list(range(len(prompt)))
        self.outputs = [_Output(text)]


def _stand_in_libraries(engines: list[dict[str, Any]], fail_on: str | None) -> dict[str, types.ModuleType]:
    """Minimal ``vllm`` (LLM.chat echoes the last message) and ``ray`` (actors run in-process)."""
    vllm = types.ModuleType("vllm")

    class LLM:
        def __init__(self, **arguments: Any) -> None:
            self.number = len(engines)
            engines.append(arguments)

        def chat(self, conversations: list, sampling_params: list, use_tqdm: bool) -> list[_RequestOutput]:
            if fail_on is not None and any(c[-1]["content"] == fail_on for c in conversations):
                raise RuntimeError("CUDA out of memory")
            return [
                _RequestOutput(c[-1]["content"], f"engine{self.number}:{c[-1]['content']}:seed{p['seed']}")
                for c, p in zip(conversations, sampling_params, strict=True)
            ]

    vllm.LLM = LLM
    vllm.SamplingParams = lambda **kwargs: kwargs
    ray = types.ModuleType("ray")

    class _Method:
        def __init__(self, bound: Any) -> None:
            self.remote = bound

    class _Handle:
        def __init__(self, instance: Any) -> None:
            self.chat = _Method(instance.chat)

    def remote(num_gpus: int):
        def wrap(cls: type) -> Any:
            return types.SimpleNamespace(remote=lambda *args: _Handle(cls(*args)), num_gpus=num_gpus)

        return wrap

    ray.remote, ray.get = remote, lambda futures: list(futures)
    ray.is_initialized, ray.init = (lambda: True), (lambda: None)
    return {"vllm": vllm, "ray": ray}


def test_data_parallel_shards_across_workers_and_keeps_order(monkeypatch: pytest.MonkeyPatch) -> None:
    engines: list[dict[str, Any]] = []
    for name, module in _stand_in_libraries(engines, fail_on=None).items():
        monkeypatch.setitem(sys.modules, name, module)
    backend = VLLMBackend(model="m", tensor_parallel_size=2, data_parallel=3, batch_size=7)
    requests = make_requests(10)
    outcomes = list(backend.generate(requests))
    assert [outcome.request.key for outcome in outcomes] == [request.key for request in requests]
    assert all(isinstance(outcome, Completion) for outcome in outcomes)
    # batch 1 = 7 requests → shards 3/2/2, batch 2 = 3 requests → 1/1/1 on the same three engines
    assert [outcome.text.split(":")[0] for outcome in outcomes] == [
        "engine0",
        "engine0",
        "engine0",
        "engine1",
        "engine1",
        "engine2",
        "engine2",
        "engine0",
        "engine1",
        "engine2",
    ]
    assert outcomes[4].text == "engine1:q4:seed11"
    assert outcomes[4].usage == {"prompt_tokens": 2, "completion_tokens": len("engine1:q4:seed11"), "total_tokens": 19}
    assert len(engines) == 3
    assert engines[0] == {"model": "m", "tensor_parallel_size": 2, "seed": 11}


def test_a_failed_batch_fails_only_its_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    engines: list[dict[str, Any]] = []
    for name, module in _stand_in_libraries(engines, fail_on="q1").items():
        monkeypatch.setitem(sys.modules, name, module)
    outcomes = list(VLLMBackend(model="m", batch_size=2).generate(make_requests(4)))
    assert [type(outcome) for outcome in outcomes] == [RequestFailure, RequestFailure, Completion, Completion]
    assert "CUDA out of memory" in outcomes[0].error
    assert len(engines) == 1


def test_a_batch_smaller_than_the_shard_count(monkeypatch: pytest.MonkeyPatch) -> None:
    engines: list[dict[str, Any]] = []
    for name, module in _stand_in_libraries(engines, fail_on=None).items():
        monkeypatch.setitem(sys.modules, name, module)
    outcomes = list(VLLMBackend(model="m", data_parallel=4, batch_size=2).generate(make_requests(5)))
    assert [outcome.text for outcome in outcomes] == [
        "engine0:q0:seed11", "engine1:q1:seed11", "engine0:q2:seed11", "engine1:q3:seed11", "engine0:q4:seed11",
    ]  # fmt: skip
    assert len(engines) == 4
