"""studio.policies: who may do what, in one table; and no other module writes a role list or compares a role.

The table below is the whole authorisation model of the studio; a change to a policy shows up here first. The
source scan keeps it the only one: outside ``studio/policies.py`` no module may hold a list of role names or test
``something.role`` against anything (a check written there would bypass the policies).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from studio.errors import NotAuthenticated, PermissionDenied
from studio.policies import (
    ROLES,
    AccountPolicy,
    AdminPolicy,
    CampaignPolicy,
    CurationPolicy,
    PolicyAction,
    ResultsPolicy,
    authorize,
    is_allowed,
)
from tests.repo import REPO_ROOT


@dataclass(frozen=True)
class Person:
    role: str


@dataclass(frozen=True)
class CampaignFixture:
    name: str
    eligible_roles: tuple[str, ...]


CROWD = CampaignFixture("vote", ("annotator",))
EXPERTS = CampaignFixture("review", ("expert",))
SAFETY = CampaignFixture("safety", ("annotator", "expert"))

#: action -> the roles it allows (every other role is refused).
ALLOWED: dict[str, tuple[PolicyAction, set[str]]] = {
    "own account": (AccountPolicy.own(), set(ROLES)),
    "answer a crowd campaign": (CampaignPolicy.answer(CROWD), {"annotator"}),
    "answer an expert campaign": (CampaignPolicy.answer(EXPERTS), {"expert"}),
    "answer a mixed campaign": (CampaignPolicy.answer(SAFETY), {"annotator", "expert"}),
    "list every campaign": (CampaignPolicy.list_all(), {"curator", "researcher", "admin"}),
    "read a crowd campaign's progress": (
        CampaignPolicy.read_progress(CROWD),
        {"annotator", "curator", "researcher", "admin"},
    ),
    "read curation": (CurationPolicy.read(), {"curator", "researcher", "admin"}),
    "decide a scenario": (CurationPolicy.decide(), {"curator", "admin"}),
    "publish a version": (CurationPolicy.publish(), {"curator", "admin"}),
    "aggregate": (CurationPolicy.aggregate(), {"curator", "admin"}),
    "read results": (ResultsPolicy.read(), {"researcher", "curator", "admin"}),
    "manage people's accounts": (AdminPolicy.manage_users(), {"admin"}),
    "read the whole audit log": (AdminPolicy.read_audit(), {"admin"}),
    "create, close and assign campaigns": (AdminPolicy.manage_campaigns(), {"admin"}),
    "import scenario files": (AdminPolicy.import_scenarios(), {"curator", "admin"}),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_action_allows_exactly_its_roles(name: str) -> None:
    action, allowed = ALLOWED[name]
    for role in ROLES:
        assert is_allowed(Person(role), action) is (role in allowed), (name, role)
        if role in allowed:
            authorize(Person(role), action)
        else:
            with pytest.raises(PermissionDenied) as refused:
                authorize(Person(role), action)
            assert str(refused.value).split(":")[0] in ("role", "campaign"), refused.value
    assert is_allowed(None, action) is False
    with pytest.raises(NotAuthenticated):
        authorize(None, action)


def test_refusals_name_the_role_and_what_it_needs() -> None:
    with pytest.raises(PermissionDenied, match=r"^role: 'annotator' may not do this \(needs curator or admin\)$"):
        authorize(Person("annotator"), CurationPolicy.decide())
    with pytest.raises(PermissionDenied, match=r"^campaign: 'review' is not open to role 'annotator'$"):
        authorize(Person("annotator"), CampaignPolicy.answer(EXPERTS))
    assert ROLES == ("annotator", "expert", "curator", "researcher", "admin")


#: The roles of chat messages (``studio.models.LiveTurn.role``), compared freely.
CHAT_ROLES = frozenset({"user", "assistant", "system"})


def _role_lists_and_checks(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """Collections of two or more role names, and comparisons of a ``.role`` attribute, in one source file."""
    found = []
    roles = set(ROLES)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            names = [item.value for item in node.elts if isinstance(item, ast.Constant) and item.value in roles]
            if len(names) >= 2 and len(names) == len(node.elts):
                found.append(f"{path.relative_to(root)}:{node.lineno}: role list {names}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            # A chat message's role (a live session's turn: "user" / "assistant") is no person's role.
            constants = [side.value for side in sides if isinstance(side, ast.Constant)]
            if constants and all(value in CHAT_ROLES for value in constants):
                continue
            if any(isinstance(side, ast.Attribute) and side.attr == "role" for side in sides):
                found.append(f"{path.relative_to(root)}:{node.lineno}: a role compared outside the policies")
    return found


def test_no_module_but_the_policies_writes_a_role_list_or_checks_a_role() -> None:
    sources = sorted((REPO_ROOT / "studio").rglob("*.py"))
    offending = [
        finding
        for path in sources
        if path != REPO_ROOT / "studio" / "policies.py"
        for finding in _role_lists_and_checks(path)
    ]
    assert not offending, "\n".join(offending)


def test_the_scan_finds_a_role_list_and_a_role_check(tmp_path: Path) -> None:
    sample = tmp_path / "probe.py"
    sample.write_text('ALLOWED = ("curator", "admin")\nif user.role in ALLOWED:\n    pass\n', encoding="utf-8")
    assert _role_lists_and_checks(sample, tmp_path) == [
        "probe.py:1: role list ['curator', 'admin']",
        "probe.py:2: a role compared outside the policies",
    ]
    chat = tmp_path / "chat.py"
    chat.write_text('mine = turn.role == "user"\nstaff = user.role == "admin"\n', encoding="utf-8")
    assert _role_lists_and_checks(chat, tmp_path) == ["chat.py:2: a role compared outside the policies"]
