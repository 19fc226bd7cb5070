"""Who may do what: the studio's roles and every authorisation rule, in this one module.

The pattern is argilla-server's: a policy *action* is a small function of the caller (``Policy.action(resource)``
returns it), and a use case calls :func:`authorize` with it before it does anything else::

    authorize(caller, CurationPolicy.decide())
    authorize(caller, CampaignPolicy.answer(campaign))

A refusal raises ``PermissionDenied`` with a ``field: problem`` message safe to show the caller; no caller at all
raises ``NotAuthenticated``. Services below the use cases trust their callers (the use cases, and the command line,
which is trusted) and check no roles. No other module writes a role name: schemas, models and commands import
:data:`ROLES` and :data:`Role` from here.

This module imports neither the ORM nor a web framework, so ``h2h --help`` can build its role choices from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Literal, Protocol, get_args

from studio.errors import NotAuthenticated, PermissionDenied

Role = Literal["annotator", "expert", "curator", "researcher", "admin"]
#: Every role, in order of the studio's workflow (the order ``h2h users add --role`` lists them).
ROLES: tuple[Role, ...] = get_args(Role)

#: People who change the dataset: decide scenarios, publish versions, run aggregation.
CURATORS: frozenset[Role] = frozenset({"curator", "admin"})
#: People who read results and the curation views (curators too).
RESEARCHERS: frozenset[Role] = frozenset({"researcher", "curator", "admin"})
#: People who review live sessions the crisis tripwire marked (``LivePolicy.review``): experts, and researchers,
#: curators and admins.
REVIEWERS: frozenset[Role] = frozenset({"expert", "researcher", "curator", "admin"})
#: People who manage campaigns: they see every campaign, open or closed, and every campaign's progress.
MANAGERS: frozenset[Role] = RESEARCHERS
#: People who run the studio: accounts, the whole audit log, creating and assigning campaigns. The store always keeps
#: one active person in one of these roles (``studio.services.auth`` refuses to deactivate or demote the last one).
ADMINS: frozenset[Role] = frozenset({"admin"})


class Caller(Protocol):
    """Anything with a role: the signed-in person (``studio.models.UserPublic``)."""

    @property
    def role(self) -> str: ...


class CampaignLike(Protocol):
    """A campaign as a policy sees it: its name and the roles its schema lets answer (a row or a parsed state)."""

    @property
    def name(self) -> str: ...

    @property
    def eligible_roles(self) -> Iterable[str]: ...


#: A rule: None when the caller may go ahead, else why not (``field: problem``, safe to show the caller).
PolicyAction = Callable[[Caller], str | None]


def authorize(caller: Caller | None, action: PolicyAction) -> None:
    """Raise ``NotAuthenticated`` for no caller, ``PermissionDenied`` when ``action`` refuses ``caller``."""
    if caller is None:
        raise NotAuthenticated("login required")
    refusal = action(caller)
    if refusal is not None:
        raise PermissionDenied(refusal)


def is_allowed(caller: Caller | None, action: PolicyAction) -> bool:
    """Whether :func:`authorize` would let ``caller`` go ahead (for what a page shows; never instead of it)."""
    return caller is not None and action(caller) is None


def is_admin_role(role: str) -> bool:
    """Whether ``role`` is one of :data:`ADMINS` (the store always keeps one active person holding such a role)."""
    return role in ADMINS


def _one_of(roles: frozenset[Role]) -> PolicyAction:
    needs = " or ".join(role for role in ROLES if role in roles)

    def is_allowed_role(caller: Caller) -> str | None:
        return None if caller.role in roles else f"role: {caller.role!r} may not do this (needs {needs})"

    return is_allowed_role


def _anyone(_caller: Caller) -> str | None:
    return None


class AccountPolicy:
    """The caller's own account: their profile, signing out, their own answers."""

    @staticmethod
    def own() -> PolicyAction:
        return _anyone


class AdminPolicy:
    """Running the studio: other people's accounts, the audit log, campaigns, imports (the admin page and API)."""

    @staticmethod
    def manage_users() -> PolicyAction:
        """List people; add them; change a role; deactivate, reactivate; reset a password; revoke sessions."""
        return _one_of(ADMINS)

    @staticmethod
    def read_audit() -> PolicyAction:
        """Read the audit log on the admin page and ``/v1/admin/audit`` (what :class:`AuditPolicy` shows, filtered)."""
        return _one_of(ADMINS)

    @staticmethod
    def manage_campaigns() -> PolicyAction:
        """Create campaigns, close and reopen them, say which roles may work on them, read every one's progress."""
        return _one_of(ADMINS)

    @staticmethod
    def import_scenarios() -> PolicyAction:
        """Upload scenario files (checked, then stored on confirmation); the only upload the studio takes."""
        return _one_of(CURATORS)


#: What each non-admin role sees of the audit log: the entities (``AuditLog.entity``) of what it may manage. An allow
#: list, so an entity added later is shown to admins only until someone decides otherwise. Curators: the dataset and
#: the work on it (scenarios, responses, campaigns and their aggregation, imports, published versions) — never
#: accounts (``user``: resets, role changes, deactivations, who exists). Researchers: the published versions they
#: read. Annotators and experts: nothing (``AuditPolicy.read`` refuses them).
AUDIT_ENTITIES_BY_ROLE: Mapping[str, frozenset[str]] = {
    "curator": frozenset({"scenario", "response", "campaign", "dataset_version", "import"}),
    "researcher": frozenset({"dataset_version"}),
}


class AuditPolicy:
    """The audit log: who reads it at all, and which of its entries each role sees (what that role may manage)."""

    @staticmethod
    def read() -> PolicyAction:
        """Read the audit entries :meth:`visible_entities` allows (the Curate page's log, a scenario's log)."""
        return _one_of(RESEARCHERS)

    @staticmethod
    def visible_entities(caller: Caller) -> frozenset[str] | None:
        """The entities whose entries ``caller`` sees: None for every entry (admins), else
        :data:`AUDIT_ENTITIES_BY_ROLE` (empty for a role it does not name). Every audit query takes this value
        (``studio.services.audit``, ``studio.services.curation.list_audit_entries``), so no door shows more."""
        if is_admin_role(caller.role):
            return None
        return AUDIT_ENTITIES_BY_ROLE.get(caller.role, frozenset())


class CampaignPolicy:
    """Campaigns: who answers them, who sees them listed, who reads their progress."""

    @staticmethod
    def answer(campaign: CampaignLike) -> PolicyAction:
        """Take items, answer, skip and revise: the roles the campaign's schema names (``eligible_roles``)."""

        def may_answer(caller: Caller) -> str | None:
            if caller.role in set(campaign.eligible_roles):
                return None
            return f"campaign: {campaign.name!r} is not open to role {caller.role!r}"

        return may_answer

    @staticmethod
    def list_all() -> PolicyAction:
        """See every campaign in listings, closed ones included (others see the open ones they may answer)."""
        return _one_of(MANAGERS)

    @staticmethod
    def read_progress(campaign: CampaignLike) -> PolicyAction:
        """A campaign's progress: those who answer it, and managers."""
        answering = CampaignPolicy.answer(campaign)

        def may_read(caller: Caller) -> str | None:
            return None if caller.role in MANAGERS else answering(caller)

        return may_read


class LivePolicy:
    """Live companion sessions: who talks and rates, who reads a transcript."""

    @staticmethod
    def talk(campaign: CampaignLike) -> PolicyAction:
        """Open a session, send messages, rate it: the roles the campaign's schema names, like answering."""
        return CampaignPolicy.answer(campaign)

    @staticmethod
    def read_transcript(*, owner_id: int | None, caller_id: int, needs_review: bool = False) -> PolicyAction:
        """A session's whole record (model, variant, tripwire): researchers, curators and admins, and experts for a
        session the crisis tripwire marked for their review. Its rater reads their own session through the rater's
        view, which names neither model nor variant."""

        def may_read(caller: Caller) -> str | None:
            if caller.role in RESEARCHERS or (needs_review and caller.role in REVIEWERS):
                return None
            if owner_id is not None and owner_id == caller_id:
                return "session: your own conversation is shown without its model and variant (GET as its rater)"
            return "session: only its rater, researchers, curators and admins (experts: a session marked for review)"

        return may_read

    @staticmethod
    def review() -> PolicyAction:
        """List the sessions the crisis tripwire marked for review and record a review: experts, and those who read
        results."""
        return _one_of(REVIEWERS)


class CurationPolicy:
    """The dataset: browsing and reading it, deciding scenarios, publishing versions, aggregating answers."""

    @staticmethod
    def read() -> PolicyAction:
        """Browse scenarios and responses, read one scenario and the published versions."""
        return _one_of(RESEARCHERS)

    @staticmethod
    def decide() -> PolicyAction:
        """Accept, edit or reject a scenario."""
        return _one_of(CURATORS)

    @staticmethod
    def publish() -> PolicyAction:
        """Publish the accepted scenarios as a dataset version."""
        return _one_of(CURATORS)

    @staticmethod
    def aggregate() -> PolicyAction:
        """Run the campaigns' aggregation rules (they write statuses, review items and J_human)."""
        return _one_of(CURATORS)


class ResultsPolicy:
    """Results: the leaderboard, Table 3, Fig. 7, agreement, calibration, progress, score distributions."""

    @staticmethod
    def read() -> PolicyAction:
        return _one_of(RESEARCHERS)
