"""The README's configuration table lists exactly the studio's settings, with their defaults (datasette's habit:
documentation that a test keeps true)."""

from __future__ import annotations

import re

from studio.settings import Settings
from tests.repo import REPO_ROOT

ROW = re.compile(r"^\| `(H2H_[A-Z0-9_]+)` \| (.+?) \| .+ \|$")


def documented_settings(readme: str) -> dict[str, str]:
    """Variable → default as written, from the table under the README's "### Configuration" heading."""
    section = readme.split("### Configuration", 1)[1].split("\n#", 1)[0]
    return {match.group(1): match.group(2) for line in section.splitlines() if (match := ROW.match(line.strip()))}


def shown_default(value: object) -> str:
    return "unset" if value is None else f"`{value}`"


def test_the_readme_lists_every_setting_with_its_default() -> None:
    documented = documented_settings((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    actual = {f"H2H_{name.upper()}": shown_default(field.default) for name, field in Settings.model_fields.items()}
    assert documented == actual


def test_the_table_reader_finds_rows_and_ignores_prose() -> None:
    readme = "## Intro\n`H2H_X` here\n### Configuration\n\n| variable | default | what |\n|---|---|---|\n"
    readme += "| `H2H_A` | `1` | one |\n| `H2H_B` | unset | two |\n\n## Next\n| `H2H_C` | `3` | three |\n"
    assert documented_settings(readme) == {"H2H_A": "`1`", "H2H_B": "unset"}
