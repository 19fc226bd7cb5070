"""Rebuild the bundled ``data/demo/responses.jsonl`` from ``scenarios.jsonl`` beside it (deterministic).

The three demo systems are fixtures, not models: each answer is derived by a fixed rule from the
scenario (see ``data/demo/README.md``). Run from a checkout after changing the scenarios or a prompt file::

    python -m pipeline.demo_responses

It writes into :func:`pipeline.paths.demo_dir` (the checkout's ``data/demo/``, or ``$H2H_DATA_DIR/demo``).
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from pipeline.dataset import load_scenarios
from pipeline.jsonl import write_records
from pipeline.paths import demo_dir
from pipeline.prompts import prompt_version
from pipeline.records import VARIANTS, Response, Scenario

SYSTEMS = ("demo-warm-companion", "demo-terse-assistant", "demo-literal-planner")
CREATED_AT = datetime(2025, 1, 1, tzinfo=UTC)
#: Responses that carry hostile markup as plain text, so the studio's escaping is exercised.
MARKUP_CASES = {
    ("demo-dialogue_base-003", "demo-literal-planner", "with_sap"): " <img src=x onerror=alert(1)> (markup test)",
    ("demo-itinerary_basic-001", "demo-terse-assistant", "without_sap"): " <script>alert('h2h')</script> (markup test)",
    ("demo-recollection_refinement-003", "demo-warm-companion", "without_sap"): (
        ' <a href="javascript:alert(1)">open plan</a> (markup test)'
    ),
}
DISMISSIVE = {
    "zh": "别这么想啦，事情没那么糟！我们聊点开心的吧，你今天吃了什么好吃的？",
    "en": "Don't think that way, it's not that bad! Let's talk about something happier. Seen any good movies lately?",
}
SAFETY_SHORT = {
    "zh": "听到这些我很难过。你现在安全吗？如果有危险请拨打120/110，"
    "或打心理援助热线 400-161-9995，也请告诉一位信任的人。",
    "en": "I'm sorry you're going through this. Are you safe right now? If you're in danger, call your local "
    "emergency number or a crisis line (988 in the US), and please tell someone you trust.",
}
SAFETY_STEPS = {
    "zh": "检测到风险。步骤：1. 确认你现在是否安全。2. 如有危险拨打120或110。"
    "3. 拨打心理援助热线 400-161-9995。4. 联系一位信任的人。",
    "en": "Risk detected. Steps: 1. Confirm whether you are safe now. 2. If in danger, call emergency services. "
    "3. Contact a crisis line (988 in the US). 4. Contact a trusted person.",
}


def language(scenario: Scenario) -> str:
    return "en" if scenario.tags.language == "en" else "zh"


def sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?。！？～])\s*", text) if part.strip()]


def joiner(scenario: Scenario) -> str:
    return " " if language(scenario) == "en" else ""


OPENERS = {
    "dialogue": {"en": "I'm really glad you told me.", "zh": "谢谢你跟我说这些。"},
    "recollection": {"en": "I've been thinking about what you've shared with me.", "zh": "你跟我说过的事我都记着呢。"},
    "itinerary": {"en": "Happy to help you sort this out.", "zh": "交给我，我们一起理一理。"},
}


def first_half(parts: list[str]) -> list[str]:
    """Return the leading sentences that make up at least half of the text's characters."""
    total, kept = sum(len(part) for part in parts), []
    for part in parts:
        kept.append(part)
        if sum(len(item) for item in kept) * 2 >= total:
            break
    return kept


def warm(scenario: Scenario, variant: str) -> str:
    parts = sentences(scenario.reference)
    lang = language(scenario)
    if variant == "with_sap":
        opener = OPENERS[scenario.dimension][lang]
        if scenario.tags.high_risk or re.search(r"glad|thank|谢谢", parts[0], re.IGNORECASE):
            opener = ""
        kept = parts if scenario.tags.high_risk or len(parts) <= 2 else parts[:-1]
        return joiner(scenario).join([opener, *kept]).strip()
    closer = "I'm here if you want to talk more." if lang == "en" else "想聊的话我一直在。"
    return joiner(scenario).join([*first_half(parts), closer])


def terse(scenario: Scenario, variant: str) -> str:
    lang = language(scenario)
    if scenario.tags.high_risk:
        return SAFETY_SHORT[lang] if variant == "with_sap" else DISMISSIVE[lang]
    first = (scenario.context.schedule or scenario.context.memories or [""])[0]
    if scenario.dimension == "itinerary":
        return f"Start with {first}, then do the rest." if lang == "en" else f"先做{first}，其他的再说。"
    if scenario.dimension == "recollection":
        return "Okay, noted." if lang == "en" else "好的，记住了。"
    base = "I see. Hope things go well." if lang == "en" else "明白了，希望一切顺利。"
    if variant == "without_sap":
        return base
    return "That's understandable. " + base if lang == "en" else "可以理解。" + base


def literal(scenario: Scenario, variant: str) -> str:
    lang = language(scenario)
    if scenario.tags.high_risk:
        if variant == "with_sap":
            return SAFETY_STEPS[lang]
        if scenario.tags.risk_kind in {"suicidal_ideation", "self_harm"}:
            return DISMISSIVE[lang]
    items = scenario.context.schedule or scenario.context.memories or sentences(scenario.user_input)
    header = "Request received. Items:" if lang == "en" else "已收到请求。条目："
    lines = [header, *(f"{number}. {item}" for number, item in enumerate(items, start=1))]
    if variant == "with_sap":
        lines.append("Next step: start with item 1." if lang == "en" else "下一步：从第1条开始。")
    return "\n".join(lines)


def build_responses(scenarios: list[Scenario], version: str) -> list[Response]:
    """Return one Response per scenario x demo system x variant, in a stable order."""
    writers = {"demo-warm-companion": warm, "demo-terse-assistant": terse, "demo-literal-planner": literal}
    responses = []
    for scenario in scenarios:
        for system in SYSTEMS:
            for variant in VARIANTS:
                text = writers[system](scenario, variant) + MARKUP_CASES.get((scenario.id, system, variant), "")
                responses.append(
                    Response(
                        scenario_id=scenario.id,
                        model=system,
                        variant=variant,
                        text=text,
                        backend="demo-fixture",
                        prompt_version=version,
                        sampling={"rule": "fixture"},
                        created_at=CREATED_AT,
                    )
                )
    return responses


def main() -> None:
    """Rewrite ``responses.jsonl`` of the demo folder from its ``scenarios.jsonl``."""
    folder = demo_dir()
    scenarios = load_scenarios(folder / "scenarios.jsonl")
    count = write_records(folder / "responses.jsonl", build_responses(scenarios, prompt_version()))
    logging.getLogger(__name__).warning("wrote %d demo responses", count)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
