"""Generation prompts: one template per subtask plus the composable Secure Attachment Persona block.

Templates live in ``data/prompts/<subtask>.md`` and use :class:`string.Template` placeholders
(``$persona``, ``$memories``, ...). Only the names in :data:`PLACEHOLDERS` are allowed; any other
placeholder is an error when the template is loaded, so a typo can never reach a model silently.

Empty material is omitted cleanly: a template line whose placeholder renders empty is dropped, and
a paragraph left holding only a heading (its last line ends with ``:``) is dropped with it.

``PROMPT_VERSION`` (``v1-<8 hex>``) is derived from the bytes of every template and the SAP block,
so it changes whenever any of them changes. It is computed on first access, not at import time.
"""

from __future__ import annotations

import hashlib
import re
import string
from pathlib import Path

from pipeline.paths import prompts_dir
from pipeline.records import SUBTASKS, Scenario, ScenarioContext, Variant

#: Every placeholder a template may use.
PLACEHOLDERS: frozenset[str] = frozenset(
    {"persona", "memories", "schedule", "hobbies", "routine", "feedback", "date", "location"}
)
SAP_FILE = "sap.md"


class PromptTemplateError(ValueError):
    """A template file is missing or uses a placeholder we do not know."""


def template_path(subtask: str, directory: Path | None = None) -> Path:
    """Return the template file of ``subtask`` (``data/prompts/<subtask>.md``)."""
    return (directory or prompts_dir()) / f"{subtask}.md"


def prompt_files(directory: Path | None = None) -> list[Path]:
    """Return the files that define the generation prompts: the 11 templates, then the SAP block."""
    return [template_path(subtask, directory) for subtask in SUBTASKS] + [(directory or prompts_dir()) / SAP_FILE]


def prompt_version(directory: Path | None = None) -> str:
    """Return ``v1-<8 hex>``: a hash over the names and bytes of every prompt file."""
    digest = hashlib.sha256()
    for path in prompt_files(directory):
        if not path.exists():
            raise PromptTemplateError(f"{path}: prompt file is missing")
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"v1-{digest.hexdigest()[:8]}"


def __getattr__(name: str) -> str:
    # PROMPT_VERSION is the cross-team name; computing it lazily keeps file reads out of import time.
    if name == "PROMPT_VERSION":
        return prompt_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_template(subtask: str, directory: Path | None = None) -> string.Template:
    """Read the template of ``subtask``; raise :class:`PromptTemplateError` on an unknown placeholder."""
    path = template_path(subtask, directory)
    if not path.exists():
        raise PromptTemplateError(f"{path}: no prompt template for subtask {subtask!r}")
    text = path.read_text(encoding="utf-8")
    template = string.Template(text)
    if not template.is_valid():
        raise PromptTemplateError(f"{path}: malformed placeholder (a lone '$'; write '$$' for a dollar sign)")
    unknown = sorted(set(template.get_identifiers()) - PLACEHOLDERS)
    if unknown:
        raise PromptTemplateError(f"{path}: unknown placeholder(s) {', '.join('$' + n for n in unknown)}")
    return template


def load_sap(directory: Path | None = None) -> str:
    """Return the Secure Attachment Persona block (``data/prompts/sap.md``), stripped."""
    path = (directory or prompts_dir()) / SAP_FILE
    if not path.exists():
        raise PromptTemplateError(f"{path}: the SAP block is missing")
    return path.read_text(encoding="utf-8").strip()


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items if item.strip())


def placeholder_values(persona: str, context: ScenarioContext) -> dict[str, str]:
    """Return the text each placeholder renders to; empty string where there is nothing to say."""
    return {
        "persona": persona.strip(),
        "memories": _bullets(context.memories),
        "schedule": _bullets(context.schedule),
        "hobbies": ", ".join(hobby.strip() for hobby in context.hobbies if hobby.strip()),
        "routine": (context.routine or "").strip(),
        "feedback": (context.feedback or "").strip(),
        "date": (context.date or "").strip(),
        "location": (context.location or "").strip(),
    }


def _placeholders_in(line: str) -> list[str]:
    # string.Template's own pattern, so "$$" escapes are never mistaken for placeholders
    matches = string.Template.pattern.finditer(line)
    return [
        match.group("named") or match.group("braced")
        for match in matches
        if match.group("named") or match.group("braced")
    ]


def _drop_empty_sections(text: str, values: dict[str, str]) -> str:
    """Drop lines whose placeholders are empty, then paragraphs reduced to a bare heading."""
    kept_paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line for line in paragraph.splitlines() if all(values[name] for name in _placeholders_in(line))]
        if lines and not lines[-1].rstrip().endswith(":"):
            kept_paragraphs.append("\n".join(lines))
    return "\n\n".join(kept_paragraphs)


def render_system_prompt(
    subtask: str,
    *,
    persona: str,
    context: ScenarioContext,
    variant: Variant,
    directory: Path | None = None,
) -> str:
    """Return the system prompt: the subtask template filled in, plus the SAP block for ``with_sap``."""
    values = placeholder_values(persona, context)
    template = load_template(subtask, directory)
    trimmed = string.Template(_drop_empty_sections(template.template, values))
    # substitute (not safe_substitute): every placeholder is known, so a KeyError here is a real bug.
    system = trimmed.substitute(values).strip()
    if variant == "with_sap":
        system = f"{system}\n\n{load_sap(directory)}"
    elif variant != "without_sap":
        raise ValueError(f"unknown variant {variant!r}; expected 'with_sap' or 'without_sap'")
    return system


def build_messages(scenario: Scenario, variant: Variant, directory: Path | None = None) -> list[dict[str, str]]:
    """Return OpenAI chat messages: system prompt, the history turns in order, then the user's input.

    An empty ``user_input`` (imported upstream scenarios) adds no final user message.
    """
    system = render_system_prompt(
        scenario.subtask, persona=scenario.persona, context=scenario.context, variant=variant, directory=directory
    )
    messages = [{"role": "system", "content": system}]
    messages.extend({"role": turn.role, "content": turn.content} for turn in scenario.history)
    if scenario.user_input.strip():
        messages.append({"role": "user", "content": scenario.user_input})
    return messages


def context_fields(subtask: str, directory: Path | None = None) -> tuple[str, ...]:
    """The scenario ``context`` fields the prompt of ``subtask`` shows the model (its placeholders but ``persona``),
    in :data:`CONTEXT_ORDER`; every context field for a subtask with no template. The studio shows an annotator the
    same material the model was given."""
    path = template_path(subtask, directory)
    if not path.exists():
        return CONTEXT_ORDER
    used = set(load_template(subtask, directory).get_identifiers())
    return tuple(name for name in CONTEXT_ORDER if name in used)


#: The scenario context fields, in the order they are shown.
CONTEXT_ORDER: tuple[str, ...] = ("date", "location", "memories", "schedule", "routine", "hobbies", "feedback")
