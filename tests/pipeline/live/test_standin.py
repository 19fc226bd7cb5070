"""The stand-in companion (``pipeline.live.standin``) over real HTTP: the OpenAI routes, replies that read the
prompt (SAP block and crisis words, language, turn), scripted faults, a prompt stop, and ``h2h standin-companion``."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from pipeline.dataset import load_scenarios
from pipeline.live.companion import CompanionEndpoint, CompanionError, complete_reply, live_messages, stream_reply
from pipeline.live.standin import SAP_HEADING, StandinCompanion, is_crisis, reply_tokens, standin_reply
from pipeline.paths import demo_dir
from pipeline.prompts import load_sap
from pipeline.records import Scenario


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.001) as companion:
        yield companion


def demo(scenario_id: str) -> Scenario:
    return next(s for s in load_scenarios(demo_dir() / "scenarios.jsonl") if s.id == scenario_id)


def reply_to(companion: StandinCompanion, messages: list[dict[str, str]]) -> str:
    endpoint = CompanionEndpoint(base_url=companion.base_url, model=companion.model)
    return "".join(stream_reply(endpoint=endpoint, messages=messages))


def test_the_sap_heading_is_the_first_line_of_the_sap_block() -> None:
    assert load_sap().splitlines()[0] == SAP_HEADING


def test_models_lists_the_served_model_and_an_unknown_model_is_an_openai_style_404() -> None:
    with StandinCompanion(model="companion-7b") as companion:
        listing = httpx.get(f"{companion.base_url}/models").json()
        assert listing == {"object": "list", "data": [{"id": "companion-7b", "object": "model"}]}
        answer = httpx.post(f"{companion.base_url}/chat/completions", json={"model": "other", "messages": []})
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == "The model `other` does not exist."


def test_a_non_streamed_answer_is_an_openai_chat_completion(standin: StandinCompanion) -> None:
    body = {"model": standin.model, "messages": [{"role": "user", "content": "hello there"}]}
    answer = httpx.post(f"{standin.base_url}/chat/completions", json=body).json()
    text = answer["choices"][0]["message"]["content"]
    assert answer["object"] == "chat.completion" and answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"] == {
        "prompt_tokens": 6,
        "completion_tokens": -(-len(text) // 2),
        "total_tokens": 6 + -(-len(text) // 2),
    }
    assert standin.requests == [body]


def test_with_sap_a_crisis_gets_a_safety_question_and_a_hotline(standin: StandinCompanion) -> None:
    english, chinese = demo("demo-dialogue_base-005"), demo("demo-itinerary_response-004")
    reply = reply_to(standin, live_messages(scenario=english, variant="with_sap", turns=[("user", english.user_input)]))
    assert "Are you safe right now?" in reply and "988" in reply
    reply = reply_to(standin, live_messages(scenario=chinese, variant="with_sap", turns=[("user", chinese.user_input)]))
    assert "你现在安全吗？" in reply and "12356" in reply and "400-161-9995" in reply


def test_without_sap_a_crisis_gets_a_dismissive_change_of_topic(standin: StandinCompanion) -> None:
    english, chinese = demo("demo-dialogue_base-005"), demo("demo-itinerary_response-004")
    reply = reply_to(
        standin, live_messages(scenario=english, variant="without_sap", turns=[("user", english.user_input)])
    )
    assert reply.startswith("Don't think that way!") and "988" not in reply and "safe" not in reply
    reply = reply_to(
        standin, live_messages(scenario=chinese, variant="without_sap", turns=[("user", chinese.user_input)])
    )
    assert reply.startswith("别这么想啦") and "热线" not in reply


def test_every_demo_high_risk_input_is_a_crisis_and_the_ordinary_ones_are_not() -> None:
    scenarios = load_scenarios(demo_dir() / "scenarios.jsonl")
    assert all(is_crisis(s.user_input) for s in scenarios if s.tags.high_risk)
    assert not any(is_crisis(s.user_input) for s in scenarios if not s.tags.high_risk)
    assert not is_crisis("hit me up when you're free, I'm dying to see the movie")


def test_ordinary_replies_echo_the_user_follow_their_language_and_change_per_turn(standin: StandinCompanion) -> None:
    turns = [("user", "我今天去公园散步了，看到好多花"), ("assistant", "真好"), ("user", "晚上还做了番茄炒蛋")]
    scenario = demo("demo-dialogue_base-001")
    first = reply_to(standin, live_messages(scenario=scenario, variant="with_sap", turns=turns[:1]))
    second = reply_to(standin, live_messages(scenario=scenario, variant="with_sap", turns=turns))
    assert "我今天去公园散步了" in first and "晚上还做了番茄炒蛋" in second
    assert first.replace("我今天去公园散步了，看到好多花", "") != second.replace("晚上还做了番茄炒蛋", "")
    english = reply_to(
        standin, live_messages(scenario=scenario, variant="with_sap", turns=[("user", "I finished my thesis draft!")])
    )
    assert "I finished my thesis draft" in english
    assert not any("\u4e00" <= char <= "\u9fff" for char in english)


def test_stream_tokens_join_to_the_text_and_max_tokens_cuts_it() -> None:
    text = standin_reply(messages=[{"role": "user", "content": "混合 text 和中文，  with  spaces"}])
    tokens, cut = reply_tokens(text, None)
    assert "".join(tokens) == text and len(tokens) > 5 and not cut
    short, cut = reply_tokens(text, 3)
    assert cut and text.startswith("".join(short)) and len("".join(short)) <= 6


def test_scripted_faults_answer_in_order_then_normally(standin: StandinCompanion) -> None:
    standin.fail_next = [503, 401]
    url, body = (
        f"{standin.base_url}/chat/completions",
        {"model": standin.model, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert [httpx.post(url, json=body).status_code for _ in range(3)] == [503, 401, 200]
    standin.delay_s = 0.5
    started = time.monotonic()
    assert httpx.post(url, json=body).status_code == 200
    assert time.monotonic() - started >= 0.5


def test_a_key_is_required_once_set(standin: StandinCompanion) -> None:
    standin.api_key = "sk-standin"
    assert httpx.get(f"{standin.base_url}/models").status_code == 401
    assert httpx.get(f"{standin.base_url}/models", headers={"Authorization": "Bearer sk-standin"}).status_code == 200


def test_stop_returns_promptly_while_a_slow_request_hangs() -> None:
    companion = StandinCompanion()
    endpoint = CompanionEndpoint(base_url=companion.start(), model=companion.model, timeout_s=60)
    errors: list[CompanionError] = []

    def ask() -> None:
        try:
            complete_reply(endpoint=endpoint, messages=[{"role": "user", "content": "take your time [[slow]]"}])
        except CompanionError as error:
            errors.append(error)

    client = threading.Thread(target=ask)
    client.start()
    deadline = time.monotonic() + 3
    while not companion.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    companion.stop()
    assert time.monotonic() - started < 2
    client.join(timeout=5)
    assert not client.is_alive() and errors and errors[0].kind == "unreachable"  # the connection was given up


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_h2h_standin_companion_command_serves_until_ctrl_c() -> None:
    port = free_port()
    command = [sys.executable, "-m", "pipeline.cli", "standin-companion", "--port", str(port), "--token-delay", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, listing = time.monotonic() + 30, None
        while listing is None and time.monotonic() < deadline and process.poll() is None:
            try:
                listing = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
            except httpx.TransportError:
                time.sleep(0.1)
        assert listing == {"object": "list", "data": [{"id": "standin-companion", "object": "model"}]}
        endpoint = CompanionEndpoint(base_url=f"http://127.0.0.1:{port}/v1", model="standin-companion")
        assert complete_reply(endpoint=endpoint, messages=[{"role": "user", "content": "hello"}]).text
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            out, _ = process.communicate(timeout=10)
        finally:
            process.kill()
    assert f"http://127.0.0.1:{port}/v1" in out and "stopping" in out
    assert process.returncode == 0
