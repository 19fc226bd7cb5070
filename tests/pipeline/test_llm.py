"""The one cached LLM layer (``pipeline.llm``) that the judge and the curation stages share: both cache formats read
and written as before, an answer on disk before anyone sees it (a kill resumes with the same answers), failures
never cached, and a broken entry named by its missing field."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pipeline.generation.base import Completion, GenerationRequest, Outcome, RequestFailure, SamplingParams
from pipeline.jsonl import JsonlAppender, RecordError
from pipeline.judge import CACHE_FILE, JUDGE_CACHE
from pipeline.llm import ANSWERS, AnswerCache, Ask, AskStats, CacheFormat, ask_all, ask_digest, send_and_cache

SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=8, seed=0)


class EchoBackend:
    """Answers each request with its last message's content upper-cased; fails those whose content is in ``fail``."""

    name = "echo"

    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        self.fail = fail
        self.sent: list[str] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> Iterator[Outcome]:
        for request in requests:
            content = request.messages[-1]["content"]
            self.sent.append(content)
            if content in self.fail:
                yield RequestFailure(request, "HTTP 400: refused")
            else:
                yield Completion(request, content.upper(), {"prompt_tokens": 2, "completion_tokens": 1})


def _ask(text: str) -> Ask:
    return Ask([{"role": "user", "content": text}], SAMPLING)


def test_each_format_writes_the_lines_todays_files_hold(tmp_path: Path) -> None:
    for fmt, key, fields in (
        (ANSWERS, ("d1",), ["digest", "model", "raw", "usage"]),
        (JUDGE_CACHE, ("h1", "judge-x"), ["prompt_hash", "model", "raw", "usage"]),
    ):
        path = tmp_path / f"{fields[0]}.jsonl"
        with JsonlAppender(path) as appender:
            AnswerCache(path, fmt).put(appender, key, "judge-x", "4", {"total_tokens": 3})
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert list(entry) == fields and entry["raw"] == "4" and entry["model"] == "judge-x"
        reread = AnswerCache(path, fmt).answer(key)
        assert reread is not None and (reread.raw, reread.usage, reread.cached) == ("4", {"total_tokens": 3}, True)


def test_a_judge_cache_written_before_the_merge_is_read(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    line = {"prompt_hash": "abc", "model": "judge-x", "raw": '{"score": 4}', "usage": {"total_tokens": 9}}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    cache = AnswerCache(path, JUDGE_CACHE)
    assert cache.answer(("abc", "judge-x")) is not None and cache.answer(("abc", "judge-y")) is None


def test_an_answer_is_on_disk_before_it_is_yielded_so_a_kill_resumes_with_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    asks = [_ask("one"), _ask("two"), _ask("three")]
    cache = AnswerCache(path)
    with JsonlAppender(path) as appender:
        waiting = {(ask_digest("m", ask.messages, ask.sampling),): ask for ask in asks}
        sent = send_and_cache(
            EchoBackend(), waiting, model="m", cache=cache, cache_file=appender, stats=AskStats(), desc="t",
            progress=False,
        )  # fmt: skip
        first_key, first = next(sent)
        sent.close()  # the stage dies here, before the answer is used
    assert AnswerCache(path).answer(first_key) is not None and first.raw == "ONE"
    with path.open("a", encoding="utf-8") as torn:
        torn.write('{"digest": "half a line')  # a kill mid-write
    backend = EchoBackend()
    answers, stats = ask_all(backend, "m", asks, AnswerCache(path), desc="t", progress=False)
    assert backend.sent == ["two", "three"] and (stats.calls, stats.from_cache) == (2, 1)
    assert sorted(answer.raw for answer in answers.values()) == ["ONE", "THREE", "TWO"]


def test_identical_asks_are_sent_once_and_a_failure_is_never_cached(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    backend = EchoBackend(fail=frozenset({"bad"}))
    asks = [_ask("same"), _ask("same"), _ask("bad")]
    answers, stats = ask_all(backend, "m", asks, AnswerCache(path), desc="t", progress=False)
    assert backend.sent == ["same", "bad"] and [answer.raw for answer in answers.values()] == ["SAME"]
    bad = ask_digest("m", asks[2].messages, SAMPLING)
    assert stats.failures == [(bad, "HTTP 400: refused")] and stats.tokens == {
        "prompt_tokens": 2,
        "completion_tokens": 1,
    }
    assert AnswerCache(path).answer((bad,)) is None


@pytest.mark.parametrize(
    ("fmt", "line", "problem"),
    [
        (ANSWERS, {"digest": "d", "model": "m"}, "raw: missing from an LLM cache entry"),
        (JUDGE_CACHE, {"prompt_hash": "h", "raw": "4"}, "model: missing from a judge cache entry"),
    ],
)
def test_a_broken_entry_is_named_by_its_missing_field(
    tmp_path: Path, fmt: CacheFormat, line: dict, problem: str
) -> None:
    path = tmp_path / "cache.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(RecordError) as error:
        AnswerCache(path, fmt)
    assert str(error.value) == f"{path}:1: {problem}"
