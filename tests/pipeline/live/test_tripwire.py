"""The crisis tripwire on its scripts (tests/pipeline/live/crisis_scripts.yaml), its classifier over real HTTP,
and its lexicon loading (bundled and under ``$H2H_DATA_DIR``)."""

from __future__ import annotations

import json
import logging
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.live.tripwire import (
    ClassifierEndpoint,
    CrisisSignal,
    SapCheck,
    TripwireError,
    check_sap_reply,
    classifier_signals,
    crisis_signals,
    lexicon_path,
    load_crisis_lexicon,
    read_crisis_lexicon,
    tripwire,
)

SCRIPTS = yaml.safe_load((Path(__file__).parent / "crisis_scripts.yaml").read_text(encoding="utf-8"))
# The second held-out set, written by someone who had not seen the lexicon; read only by the heldout2 test.
HELDOUT2 = Path(__file__).parent / "crisis_heldout2.yaml"
# Set by the lead after measuring heldout2 on the frozen round-2 lexicon (sha256 7b338c1f2485…).
HELDOUT2_RECALL_FLOOR = 0.6  # 30/50 measured 2026-11-27 on lexicon sha256 7b338c1f… (before round 2: 14/50)
HELDOUT2_FALSE_FLAGS_CEILING = 0  # 0/50 measured 2026-11-27 (before round 2: 6/50)

PLANTED_PARTS = ("planted", "heldout1_planted", "dev2_planted", "dev2b_planted")
ORDINARY_PARTS = ("ordinary", "heldout1_ordinary", "dev2_ordinary", "dev2b_ordinary")
# Development figures of the frozen round-2 lexicon, asserted exactly: (caught or flagged, of). Round 1 had
# heldout1 at 4/24 caught and 2/24 flagged, dev2 at 18/69 and 11/60; the first pass of round-2 rules flagged 44 of
# the 46 dev2b probes before they were narrowed.
FIGURES = {
    "planted": (75, 75),
    "heldout1_planted": (24, 24),
    "dev2_planted": (69, 69),
    "dev2b_planted": (30, 30),
    "ordinary": (0, 74),
    "heldout1_ordinary": (0, 24),
    "dev2_ordinary": (0, 60),
    "dev2b_ordinary": (0, 51),
}


def _kinds(text: str) -> set[str]:
    return {signal.kind for signal in crisis_signals(text)}


def _caught(items: list[dict[str, str]]) -> list[str]:
    return [item["text"] for item in items if item["kind"] in _kinds(item["text"])]


def _flagged(items: list[dict[str, str]]) -> list[str]:
    return [item["text"] for item in items if crisis_signals(item["text"])]


def test_scripts_have_the_sizes_the_issue_asks_for() -> None:
    for part in ("planted", "ordinary"):
        languages = [item["language"] for item in SCRIPTS[part]]
        assert languages.count("zh") >= 30 and languages.count("en") >= 30, part
    for part in ("dev2_planted", "dev2_ordinary"):
        languages = [item["language"] for item in SCRIPTS[part]]
        assert len(languages) >= 40 and languages.count("zh") >= 20 and languages.count("en") >= 20, part
    assert len(SCRIPTS["heldout1_planted"]) >= 20 and len(SCRIPTS["heldout1_ordinary"]) >= 20
    assert len(SCRIPTS["replies"]) >= 10
    assert set(PLANTED_PARTS + ORDINARY_PARTS + ("replies",)) == set(SCRIPTS)


@pytest.mark.parametrize(
    "item", [item for part in PLANTED_PARTS for item in SCRIPTS[part]], ids=lambda item: item["text"][:40]
)
def test_every_planted_message_is_flagged_with_its_kind(item: dict[str, str]) -> None:
    assert item["kind"] in _kinds(item["text"])


@pytest.mark.parametrize("part", ORDINARY_PARTS)
def test_no_ordinary_message_is_flagged(part: str) -> None:
    assert _flagged(SCRIPTS[part]) == []


def test_development_figures_are_the_measured_ones() -> None:
    measured = {part: (len(_caught(SCRIPTS[part])), len(SCRIPTS[part])) for part in PLANTED_PARTS}
    measured |= {part: (len(_flagged(SCRIPTS[part])), len(SCRIPTS[part])) for part in ORDINARY_PARTS}
    assert measured == FIGURES


def test_heldout2_recall_and_false_flags_are_within_the_leads_bounds() -> None:
    """The out-of-sample figure of round 2: a set the lexicon's author never opened (the lead sets the bounds)."""
    heldout = yaml.safe_load(HELDOUT2.read_text(encoding="utf-8"))
    planted, ordinary = heldout["planted"], heldout["ordinary"]
    assert planted and ordinary
    caught, flagged = _caught(planted), _flagged(ordinary)
    figures = f"heldout2: caught {len(caught)}/{len(planted)}, flagged {len(flagged)}/{len(ordinary)}"
    assert len(caught) / len(planted) >= HELDOUT2_RECALL_FLOOR, figures
    assert len(flagged) <= HELDOUT2_FALSE_FLAGS_CEILING, figures


def test_spans_index_the_original_text_through_normalisation() -> None:
    for text, expected in [
        ("Ｉ ｗａｎｔ ｔｏ ｄｉｅ", "ｗａｎｔ ｔｏ ｄｉｅ"),
        ("so... I want to k i l l myself ok", "k i l l myself"),
        ("我想 自 杀", "想 自 杀"),
        ("today I don’t want to wake up", "don’t want to wake up"),
    ]:
        (signal,) = crisis_signals(text)
        assert text[signal.start : signal.end] == expected
        assert signal.source == "lexicon" and signal.kind == "suicidal_ideation"


def test_a_signal_names_its_cue_and_language_and_both_kinds_can_fire() -> None:
    signals = crisis_signals("昨天割腕自杀没成功")
    assert [(s.kind, s.cue, s.language) for s in signals] == [
        ("self_harm", "割腕", "zh"),
        ("suicidal_ideation", "自杀", "zh"),
    ]


def test_an_exception_suppresses_only_the_cue_it_overlaps() -> None:
    assert crisis_signals("I'm not suicidal, just tired") == []
    (signal,) = crisis_signals("I'm not suicidal, but I don't want to wake up tomorrow")
    assert signal.cue.startswith("(?:don'?t")
    assert crisis_signals("想死你了") == [] and _kinds("我想死") == {"suicidal_ideation"}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I'm planning to jump off the parking deck tomorrow.", "suicidal_ideation"),
        ("honestly thinking about ending it all soon", "suicidal_ideation"),
        ("我打算下周去跳江。", "suicidal_ideation"),
        ("I burned my thigh with a lighter.", "self_harm"),
        ("我又拿小刀割了手腕。", "self_harm"),
    ],
)
def test_compositional_rules_catch_paraphrases_that_no_script_has(text: str, kind: str) -> None:
    """Intent + ending within a few words, harm verb + body part: not a listed sentence."""
    assert kind in _kinds(text)


def test_impersonal_mentions_are_excepted_unless_the_user_speaks_of_themself() -> None:
    for text in [
        "We watched a documentary about suicide prevention in class.",
        "The singer's new song is about self-harm.",
        "He's suicidal.",
        "My friend is suicidal and I don't know how to help her.",
        "我朋友想自杀，我该怎么帮她？",
    ]:
        assert crisis_signals(text) == [], text
    # a first-person word between the context and the term, or a first-person cue of its own, still fires
    assert _kinds("After that documentary I keep thinking about suicide.") == {"suicidal_ideation"}
    (signal,) = crisis_signals("My friend killed herself last year and I want to join her.")
    assert signal.cue.startswith("{intent_en}")
    assert _kinds("看完那部电影，我也想自杀。") == {"suicidal_ideation"}


def _write(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "lexicon.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_terms_expand_in_any_order_and_bad_terms_are_refused(tmp_path: Path) -> None:
    raw = yaml.safe_load(lexicon_path().read_text(encoding="utf-8"))
    raw["terms"] = dict(reversed(list(raw["terms"].items())))  # every term now comes before the ones it names
    reordered = read_crisis_lexicon(_write(tmp_path, raw))
    for text in ["I'm going to take all my antidepressants at once.", "我决定今晚结束自己。", "He's suicidal."]:
        assert crisis_signals(text, lexicon=reordered) == crisis_signals(text), text
    terms = dict(raw["terms"])
    raw["terms"]["me_en"] = ["i", "{intent_en}"]
    raw["terms"]["intent_en"] = ["want\\s+to", "{me_en}"]
    with pytest.raises(TripwireError, match="cycle: (?:me_en -> intent_en -> me_en|intent_en -> me_en -> intent_en)"):
        read_crisis_lexicon(_write(tmp_path, raw))
    raw["terms"] = terms
    raw["cues"]["self_harm"]["en"]["regexes"] = ["{nope}\\s+again"]
    with pytest.raises(TripwireError, match=r"unknown term \{nope\}"):
        read_crisis_lexicon(_write(tmp_path, raw))


@pytest.mark.parametrize("item", SCRIPTS["replies"], ids=lambda item: item["text"][:40])
def test_sap_behaviours_of_the_scripted_replies(item: dict[str, Any]) -> None:
    check = check_sap_reply(item["text"])
    assert {name: getattr(check, name) for name in item["expect"]} == item["expect"]
    expect = item["expect"]
    should_pass = expect["empathy"] and expect["risk_check"] and expect["resources"]
    assert check.passed == (should_pass and not expect["dismissive"] and not expect["topic_change"])


def test_sap_missing_words() -> None:
    good = SapCheck(empathy=True, risk_check=True, resources=True, dismissive=False, topic_change=False)
    assert good.passed and good.missing() == []
    bad = SapCheck(empathy=True, risk_check=False, resources=False, dismissive=True, topic_change=True)
    assert not bad.passed
    assert bad.missing() == ["no risk check", "no resources", "dismissive", "changes the topic"]


# ---------------------------------------------------------------- the classifier over real HTTP


class _Classifier(ThreadingHTTPServer):
    answer: bytes = b"{}"
    status: int = 200
    seen: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Classifier

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length", "0"))
        self.server.seen.append(json.loads(self.rfile.read(length)))
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.answer)))
        self.end_headers()
        self.wfile.write(self.server.answer)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        """Quiet: the test output is not the place for access logs."""


@pytest.fixture
def classifier() -> Iterator[_Classifier]:
    server = _Classifier(("127.0.0.1", 0), _Handler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _endpoint(server: _Classifier) -> ClassifierEndpoint:
    host, port = server.server_address[:2]
    return ClassifierEndpoint(url=f"http://{host!s}:{port}/classify", timeout_s=2.0)


def test_classifier_positive_adds_a_whole_text_signal(classifier: _Classifier) -> None:
    classifier.answer = json.dumps({"crisis": True, "kind": "suicidal_ideation", "score": 0.93}).encode()
    text = "I've made my peace with everything. Tonight I'll finally rest."  # one the lexicon misses
    assert crisis_signals(text) == []
    assert tripwire(text, classifier=_endpoint(classifier)) == [
        CrisisSignal(
            kind="suicidal_ideation",
            cue="classifier score 0.93",
            language="en",
            start=0,
            end=len(text),
            source="classifier",
        )
    ]
    assert classifier.seen == [{"text": text}]


def test_classifier_negative_keeps_the_lexicon_signals(classifier: _Classifier) -> None:
    classifier.answer = json.dumps({"crisis": False, "kind": None, "score": 0.04}).encode()
    assert classifier_signals("我想自杀", endpoint=_endpoint(classifier)) == []
    assert [s.source for s in tripwire("我想自杀", classifier=_endpoint(classifier))] == ["lexicon"]


@pytest.mark.parametrize(
    ("answer", "status", "words"),
    [
        (b"not json", 200, "not JSON"),
        (b'{"crisis": "yes", "kind": null, "score": 1}', 200, "'crisis' must be"),
        (b'{"crisis": true, "kind": null, "score": 1}', 200, "'kind' is null"),
        (b'{"crisis": true, "kind": "sadness", "score": 1}', 200, "'kind' must be"),
        (b'{"crisis": true, "kind": "self_harm"}', 200, "'score' must be"),
        (b'{"crisis": true, "kind": "self_harm", "score": 1}', 500, "HTTPStatusError"),
    ],
)
def test_a_bad_classifier_answer_falls_back_on_the_lexicon_with_a_warning(
    classifier: _Classifier, caplog: pytest.LogCaptureFixture, answer: bytes, status: int, words: str
) -> None:
    classifier.answer, classifier.status = answer, status
    with pytest.raises(TripwireError, match=words):
        classifier_signals("I cut myself again", endpoint=_endpoint(classifier))
    with caplog.at_level(logging.WARNING, logger="pipeline.live.tripwire"):
        signals = tripwire("I cut myself again", classifier=_endpoint(classifier))
    assert [(s.kind, s.source) for s in signals] == [("self_harm", "lexicon")]
    assert "crisis classifier failed" in caplog.text and words in caplog.text


def test_a_down_classifier_falls_back_on_the_lexicon(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = ClassifierEndpoint(url=f"http://127.0.0.1:{port}/classify", timeout_s=1.0)
    with pytest.raises(TripwireError, match="ConnectError"):
        classifier_signals("hello", endpoint=endpoint)
    with caplog.at_level(logging.WARNING, logger="pipeline.live.tripwire"):
        assert _kinds_of(tripwire("I want to die", classifier=endpoint)) == {"suicidal_ideation"}
    assert "crisis classifier failed" in caplog.text


def _kinds_of(signals: list[CrisisSignal]) -> set[str]:
    return {signal.kind for signal in signals}


# ---------------------------------------------------------------- loading


def test_the_default_lexicon_is_bundled_and_cached() -> None:
    assert lexicon_path().is_file()
    assert load_crisis_lexicon() is load_crisis_lexicon()


def test_h2h_data_dir_replaces_the_lexicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "live" / "crisis_lexicon.yaml"
    copy.parent.mkdir()
    shutil.copy(lexicon_path(), copy)
    raw = yaml.safe_load(copy.read_text(encoding="utf-8"))
    raw["cues"]["self_harm"]["en"]["phrases"].append("purple elephant ritual")
    copy.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    monkeypatch.setenv("H2H_DATA_DIR", str(tmp_path))
    assert lexicon_path() == copy
    assert _kinds("the Purple  Elephant ritual again") == {"self_harm"}
    monkeypatch.delenv("H2H_DATA_DIR")
    assert crisis_signals("the purple elephant ritual again") == []


def test_a_broken_lexicon_is_refused_with_its_place(tmp_path: Path) -> None:
    raw = yaml.safe_load(lexicon_path().read_text(encoding="utf-8"))
    raw["cues"]["self_harm"]["zh"]["regexes"].append("(unclosed")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(TripwireError, match=r"cues\.self_harm\.zh\.regexes: bad regex '\(unclosed'"):
        read_crisis_lexicon(broken)
    del raw["sap"]["empathy"]
    broken.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(TripwireError, match="sap must have exactly"):
        read_crisis_lexicon(broken)
    with pytest.raises(TripwireError, match="crisis lexicon"):
        read_crisis_lexicon(tmp_path / "missing.yaml")
