"""vLLM throughput: our generate path against the raw ``LLM.chat`` on all prompts at once, side by side.

One engine, the same prompts, the same per-request sampling, one run. The prompts: the demo scenarios with SAP, the
project's own messages, in ``--copies`` copies whose user inputs differ by a suffix (4 × 67 = 268 prompts: more than
the CPU engine's 256 sequences, so both paths have to queue; one variant, because one ``h2h generate`` runs one).
Each round times

* raw: ``llm.chat(all conversations, sampling params)``: vLLM given everything at once, its best case;
* ours: ``pipeline.generation.runner.run_generation`` with the :class:`VLLMBackend` around the same ``LLM`` into a
  fresh run directory — the whole ``h2h generate`` path: scenarios stored, prompts built, requests fed through
  ``enqueue_chat``, each response written (fsynced) to ``responses.jsonl`` as it finishes;

alternating which goes first. It prints generated tokens per second of each, their ratio per round and overall
(goal: ours/raw ≥ 0.95), and checks that both wrote the same text for every prompt.

    python benchmarks/bench_vllm.py [--model DIR] [--copies 4] [--max-tokens 256] [--rounds 4] [--engine-option K=V]

Without ``--model`` it uses the project's tiny random-weight Qwen2 (``h2h tiny-models``): on a CPU that measures
the feeding overhead against a very fast model, the hardest case for the ratio. Exits 1 when the texts differ.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.generation.base import GenerationRequest, SamplingParams
from pipeline.generation.runner import build_requests, run_generation
from pipeline.generation.vllm_backend import DEFAULT_MAX_IN_FLIGHT, VLLMBackend, parse_engine_option, sampling_kwargs
from pipeline.paths import demo_dir
from pipeline.records import Response, Scenario
from pipeline.rundir import RunDir

GOAL = 0.95
VARIANT = "with_sap"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model directory or id [the tiny Qwen2]")
    parser.add_argument("--copies", type=int, default=4, help="copies of the 67 demo scenarios")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4, help="rounds, alternating which path goes first")
    parser.add_argument("--max-in-flight", type=int, default=DEFAULT_MAX_IN_FLIGHT)
    parser.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE")
    return parser.parse_args(argv)


def load_demo(copies: int) -> list[Scenario]:
    """The demo scenarios, ``copies`` times; copy k > 0 has ids ending ``#k`` and ``(k)`` after the user input."""
    from pipeline.dataset import load_scenarios

    demo = load_scenarios(demo_dir() / "scenarios.jsonl")
    return [
        scenario.model_copy(update={"id": f"{scenario.id}#{k}", "user_input": f"{scenario.user_input} ({k})"})
        if k
        else scenario
        for k in range(copies)
        for scenario in demo
    ]


def all_requests(scenarios: list[Scenario], model: str, sampling: SamplingParams) -> list[GenerationRequest]:
    return build_requests(scenarios, model=model, variant=VARIANT, sampling=sampling)


def time_raw(llm: Any, requests: list[GenerationRequest]) -> tuple[float, int, dict[tuple[str, str, str], str]]:
    """Seconds, generated tokens and texts of one ``LLM.chat`` over every request."""
    import vllm

    conversations = [request.messages for request in requests]
    params = [vllm.SamplingParams(**sampling_kwargs(request.sampling)) for request in requests]
    start = time.perf_counter()
    outputs = llm.chat(conversations, sampling_params=params, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(output.outputs[0].token_ids) for output in outputs)
    texts = {request.key: output.outputs[0].text for request, output in zip(requests, outputs, strict=True)}
    return seconds, tokens, texts


def time_ours(
    backend: VLLMBackend, scenarios: list[Scenario], model: str, sampling: SamplingParams, work: Path
) -> tuple[float, int, dict[tuple[str, str, str], str]]:
    """Seconds, generated tokens and texts of the generate stage into a fresh run directory."""
    run = RunDir(Path(tempfile.mkdtemp(dir=work)))
    start = time.perf_counter()
    summary = run_generation(run, scenarios, backend, model=model, variant=VARIANT, sampling=sampling, progress=False)
    seconds = time.perf_counter() - start
    if summary.failures:
        raise RuntimeError(f"{len(summary.failures)} requests failed: {summary.failures[:3]}")
    responses = run.load(run.responses, Response)
    tokens = sum(response.usage["completion_tokens"] for response in responses.values())
    return seconds, tokens, {key: response.text for key, response in responses.items()}


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if arguments.model is None:
        from pipeline.tinymodels import cached_tiny_models

        arguments.model = str(cached_tiny_models().chat)
    options = dict(parse_engine_option(text) for text in arguments.engine_option)
    scenarios = load_demo(arguments.copies)
    sampling = SamplingParams(temperature=0.7, top_p=1.0, max_tokens=arguments.max_tokens, seed=0)
    requests = all_requests(scenarios, arguments.model, sampling)
    backend = VLLMBackend(model=arguments.model, max_in_flight=arguments.max_in_flight, engine_options=options)
    started = time.perf_counter()
    backend.start(seed=0)
    print(f"engine started in {time.perf_counter() - started:.1f} s: {backend.manifest_settings()['engine_arguments']}")
    print(f"{len(requests)} prompts, max_tokens {arguments.max_tokens}, {arguments.rounds} rounds")
    totals = {"raw": [0.0, 0], "ours": [0.0, 0]}
    same = True
    try:
        with tempfile.TemporaryDirectory() as work:
            for round_number in range(arguments.rounds):
                order = ("raw", "ours") if round_number % 2 == 0 else ("ours", "raw")
                measured = {}
                for path in order:
                    if path == "raw":
                        measured[path] = time_raw(backend.engine, requests)
                    else:
                        measured[path] = time_ours(backend, scenarios, arguments.model, sampling, Path(work))
                same &= measured["raw"][2] == measured["ours"][2]
                rates = {path: measured[path][1] / measured[path][0] for path in measured}
                for path in measured:
                    totals[path][0] += measured[path][0]
                    totals[path][1] += measured[path][1]
                print(
                    f"round {round_number + 1} ({' then '.join(order)}): raw {rates['raw']:,.0f} tok/s, "
                    f"ours {rates['ours']:,.0f} tok/s, ratio {rates['ours'] / rates['raw']:.3f}"
                )
    finally:
        backend.close()
    raw_rate, our_rate = totals["raw"][1] / totals["raw"][0], totals["ours"][1] / totals["ours"][0]
    ratio = our_rate / raw_rate
    print(f"overall: raw {raw_rate:,.0f} tok/s, ours {our_rate:,.0f} tok/s, ratio {ratio:.3f} (goal ≥ {GOAL})")
    print(f"texts equal (raw vs ours, every prompt, every round): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
