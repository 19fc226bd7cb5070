"""Prompt templates, the SAP block and message assembly."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pipeline import prompts
from pipeline.paths import prompts_dir
from pipeline.prompts import (
    PLACEHOLDERS,
    PromptTemplateError,
    build_messages,
    load_sap,
    load_template,
    prompt_version,
    render_system_prompt,
)
from pipeline.records import SUBTASKS, Scenario, ScenarioContext


@pytest.fixture
def prompt_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled prompts that a test may edit."""
    directory = tmp_path / "prompts"
    shutil.copytree(prompts_dir(), directory)
    return directory


def full_context() -> ScenarioContext:
    return ScenarioContext(
        memories=["Adopted a cat named Miso", "Works night shifts"],
        schedule=["09:00 dentist", "18:30 dinner with Lena"],
        hobbies=["climbing", "烘焙"],
        routine="Sleeps at 1am.",
        feedback="The morning was too rushed.",
        date="2025-05-01 (Thursday)",
        location="Lisbon",
    )


def test_prompt_version_is_a_hash_of_the_prompt_files(prompt_copy: Path) -> None:
    assert re.fullmatch(r"v1-[0-9a-f]{8}", prompts.PROMPT_VERSION)
    assert prompt_version(prompt_copy) == prompts.PROMPT_VERSION
    sap = prompt_copy / "sap.md"
    sap.write_text(sap.read_text(encoding="utf-8") + "\nOne more principle.\n", encoding="utf-8")
    changed_sap = prompt_version(prompt_copy)
    assert changed_sap != prompts.PROMPT_VERSION
    template = prompt_copy / "dialogue_base.md"
    template.write_text(template.read_text(encoding="utf-8").replace("natural", "relaxed"), encoding="utf-8")
    assert prompt_version(prompt_copy) not in {changed_sap, prompts.PROMPT_VERSION}


def test_missing_prompt_file_is_a_loud_error(prompt_copy: Path) -> None:
    (prompt_copy / "itinerary_basic.md").unlink()
    with pytest.raises(PromptTemplateError, match="itinerary_basic.md"):
        prompt_version(prompt_copy)
    with pytest.raises(PromptTemplateError, match="itinerary_basic"):
        load_template("itinerary_basic", prompt_copy)


def test_every_subtask_has_a_template_with_known_placeholders() -> None:
    for subtask in SUBTASKS:
        identifiers = set(load_template(subtask).get_identifiers())
        assert "persona" in identifiers
        assert identifiers <= PLACEHOLDERS


def test_unknown_placeholder_fails_loudly(prompt_copy: Path) -> None:
    path = prompt_copy / "dialogue_emotion.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nMood: $mood\n", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match=r"dialogue_emotion\.md.*\$mood"):
        render_system_prompt(
            "dialogue_emotion", persona="p", context=ScenarioContext(), variant="without_sap", directory=prompt_copy
        )


def test_lone_dollar_sign_fails_loudly(prompt_copy: Path) -> None:
    path = prompt_copy / "dialogue_base.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nCosts $ 5\n", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match="malformed placeholder"):
        load_template("dialogue_base", prompt_copy)


def test_escaped_dollar_is_text_not_a_placeholder(prompt_copy: Path) -> None:
    path = prompt_copy / "dialogue_base.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nA coffee costs $$5 or $${persona}.\n", encoding="utf-8")
    system = render_system_prompt(
        "dialogue_base", persona="Mia", context=ScenarioContext(), variant="without_sap", directory=prompt_copy
    )
    assert system.endswith("A coffee costs $5 or ${persona}.")


def test_sap_block_states_the_principles() -> None:
    sap = load_sap().lower()
    for phrase in (
        "secure base",
        "emotionally accessible",
        "boundaries",
        "positive interaction ratio",
        "action",
        "regulate your own emotion",
        "without escalation",
        "safety first",
        "check the risk",
        "emergency",
        "don't think that way",
    ):
        assert phrase in sap, phrase


def test_full_context_fills_every_section() -> None:
    system = render_system_prompt(
        "itinerary_advanced", persona="Theo, a calm librarian.", context=full_context(), variant="without_sap"
    )
    for text in (
        "Theo, a calm librarian.",
        "- Adopted a cat named Miso",
        "- 09:00 dentist",
        "climbing, 烘焙",
        "Sleeps at 1am.",
        "Today is 2025-05-01 (Thursday).",
        "The user is in Lisbon.",
    ):
        assert text in system, text
    assert "$" not in system
    assert "Secure Attachment Persona" not in system


def test_feedback_reaches_the_itinerary_response_template() -> None:
    system = render_system_prompt("itinerary_response", persona="p", context=full_context(), variant="without_sap")
    assert "The user's feedback on it:\nThe morning was too rushed." in system


def test_empty_sections_are_omitted_cleanly() -> None:
    system = render_system_prompt("itinerary_advanced", persona="", context=ScenarioContext(), variant="without_sap")
    for heading in ("character sheet", "Today is", "The user is in", "schedule:", "remember", "hobbies", "routine"):
        assert heading not in system, heading
    assert "$" not in system
    assert "\n\n\n" not in system
    assert system.startswith("You are a companion character")
    partial = render_system_prompt(
        "itinerary_basic", persona="p", context=ScenarioContext(location="Oslo"), variant="without_sap"
    )
    assert "The user is in Oslo." in partial and "Today is" not in partial


def test_variants_add_the_sap_block_or_not() -> None:
    without = render_system_prompt("dialogue_base", persona="p", context=ScenarioContext(), variant="without_sap")
    with_sap = render_system_prompt("dialogue_base", persona="p", context=ScenarioContext(), variant="with_sap")
    assert with_sap == f"{without}\n\n{load_sap()}"
    with pytest.raises(ValueError, match="unknown variant"):
        render_system_prompt("dialogue_base", persona="p", context=ScenarioContext(), variant="both")  # type: ignore[arg-type]


def test_build_messages_orders_system_history_then_input() -> None:
    scenario = Scenario(
        id="t-1",
        subtask="recollection_refinement",
        persona="小雨，温柔细心。",
        history=[{"role": "user", "content": "我搬家了。"}, {"role": "assistant", "content": "搬到哪里啦？"}],
        user_input="现在住在浦东。",
        reference="记下啦。",
        context=ScenarioContext(memories=["住在静安区"]),
    )
    messages = build_messages(scenario, "with_sap")
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert "小雨，温柔细心。" in messages[0]["content"] and "- 住在静安区" in messages[0]["content"]
    assert messages[0]["content"].endswith(load_sap())
    assert messages[1:] == [
        {"role": "user", "content": "我搬家了。"},
        {"role": "assistant", "content": "搬到哪里啦？"},
        {"role": "user", "content": "现在住在浦东。"},
    ]


def test_build_messages_without_user_input_ends_with_the_history() -> None:
    scenario = Scenario(id="up-1", subtask="dialogue_base", reference="ok")
    messages = build_messages(scenario, "without_sap")
    assert [message["role"] for message in messages] == ["system"]


def test_context_fields_are_the_placeholders_a_subtask_prompt_fills() -> None:
    """The studio shows an annotator the context the model was prompted with (``studio.services.content``)."""
    from pipeline.prompts import CONTEXT_ORDER, context_fields

    assert context_fields("recollection_refinement") == ("memories",)
    assert context_fields("itinerary_middle") == ("date", "location", "schedule", "routine", "hobbies")
    assert context_fields("itinerary_response") == ("date", "location", "schedule", "feedback")
    assert context_fields("dialogue_base") == ()
    assert context_fields("no_such_subtask") == CONTEXT_ORDER
