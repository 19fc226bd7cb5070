"""``h2h campaign``: create, list, close and open annotation campaigns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from studio.commands.options import db_option, open_store
from studio.policies import ROLES  # no ORM import: ``h2h --help`` stays fast

if TYPE_CHECKING:
    from studio.services.live_endpoint import LiveEndpointConfig
    from studio.workflows import WorkflowSchema

#: The options that name a live_session campaign's companion (with exactly one --model), by the key they fill;
#: refused on other workflows.
LIVE_OPTIONS = {
    "--base-url": "base_url",
    "--api-key-env": "api_key_env",
    "--token-budget": "token_budget",
    "--crisis-classifier": "classifier_url",
}


def read_gold(path: Path) -> list[dict[str, Any]]:
    """Gold entries, one JSON object per line: scenario_id (+ model, variant) and answers."""
    from pipeline.jsonl import RecordError, iter_lines

    entries = []
    try:
        lines = list(iter_lines(path))  # UTF-8 (a leading BOM allowed); a line that is not says so
    except RecordError as error:
        raise click.ClickException(str(error)) from None
    for number, line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise click.ClickException(f"{path}:{number}: (json): {error.msg}") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("answers"), dict):
            raise click.ClickException(f"{path}:{number}: answers: expected an object of question id → value")
        entries.append(entry)
    return entries


def resolve_schema(schema: str, schemas_dir: Path | None) -> WorkflowSchema:
    """The workflow ``schema`` names: a YAML file's path, or a schema name in ``schemas_dir`` (default: the
    bundled ``annotation_schemas/``). A broken YAML file or an unknown name is a usage error naming the problem."""
    from studio.workflows import SchemaFileError, load_schemas, parse_schema_file

    try:
        if schema.endswith((".yaml", ".yml")):
            if not Path(schema).is_file():
                raise click.BadParameter(f"{schema}: no such file", param_hint="--schema")
            return parse_schema_file(schema)
        schemas = load_schemas(schemas_dir)
    except SchemaFileError as error:
        raise click.BadParameter(f"\n{error}", param_hint="--schema/--schemas-dir") from None
    if schema not in schemas:
        raise click.BadParameter(
            f"{schema!r} is not one of {', '.join(sorted(schemas))} (a schema of your own: "
            "give its YAML file, or --schemas-dir DIR)",
            param_hint="--schema",
        )
    return schemas[schema]


def with_audit(schema: WorkflowSchema, *, share: float | None, items: int | None, seed: int) -> WorkflowSchema:
    """``schema`` with the audit sample the options ask for (``studio.workflows.AuditSpec``); unchanged without
    ``--audit-share``/``--audit-items``. A usage error names what is wrong (both given, not an adjudication)."""
    if share is None and items is None:
        return schema
    from pydantic import ValidationError

    from studio.workflows import WorkflowSchema

    try:
        return WorkflowSchema.model_validate(
            {**schema.model_dump(mode="json"), "audit": {"share": share, "items": items, "seed": seed}}
        )
    except ValidationError as error:
        raise click.UsageError(f"--audit-share/--audit-items: {error.errors()[0]['msg']}") from None


def live_endpoint_option(
    schema: WorkflowSchema,
    *,
    models: tuple[str, ...],
    live: dict[str, Any],
    refused: dict[str, bool],
) -> LiveEndpointConfig | None:
    """The companion a ``live_session`` campaign talks to, from ``--model`` (exactly one) and the live options
    (``live``: base_url, api_key_env, token_budget, classifier_url; None where not given); None for other workflows.

    A usage error when the options do not fit the workflow: live options on another workflow, no ``--base-url`` or
    not exactly one ``--model`` on a live one, or a response filter (``refused``: option name → given) that a live
    campaign has no use for. No ``--token-budget``: the workflow's ``live.token_budget`` applies at each turn.
    """
    from pydantic import ValidationError

    from studio.services.live_endpoint import DEFAULT_API_KEY_ENV, LiveEndpointConfig

    given = [option for option, key in LIVE_OPTIONS.items() if live.get(key) is not None]
    if schema.target != "live_session" or schema.live is None:
        if given:
            raise click.UsageError(
                f"{', '.join(given)}: only a live_session workflow (e.g. live_safety) talks to a companion; "
                f"{schema.name} has target {schema.target}"
            )
        return None
    if len(models) != 1 or live["base_url"] is None:
        raise click.UsageError(
            f"{schema.name} is a live_session workflow: name its companion with exactly one --model and --base-url "
            f"(got {len(models)} --model, {'a' if live['base_url'] else 'no'} --base-url)"
        )
    if wrong := [name for name, set_ in refused.items() if set_]:
        raise click.UsageError(f"{', '.join(wrong)}: a live_session campaign has no stored responses to filter")
    # no --token-budget stores None: the workflow's live.token_budget applies at each turn
    fields = {**live, "model": models[0], "api_key_env": live.get("api_key_env") or DEFAULT_API_KEY_ENV}
    try:
        return LiveEndpointConfig(**fields)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise click.UsageError(f"companion: {problems}") from None


def probe_companion(config: LiveEndpointConfig, schema: WorkflowSchema) -> None:
    """Ask the companion once before anything is stored: a click error naming the base URL and the problem (down,
    key refused, model not served — with the models it does serve) and telling how to fix it."""
    from studio.errors import InvalidInput
    from studio.services.live_endpoint import check_companion

    assert schema.live is not None  # a live endpoint is only made for a live_session workflow
    try:
        check_companion(config, spec=schema.live)
    except InvalidInput as error:
        raise click.ClickException(
            f"{error.detail}\nNo campaign was created. Start the companion (a stand-in for trying it out: "
            f"`h2h standin-companion --port 8765`), or fix --base-url/--model/--api-key-env."
        ) from None


@click.group("campaign")
def campaign() -> None:
    """Annotation campaigns."""


@campaign.command("create")
@click.argument("name")
@click.option(
    "--schema",
    "schema_name",
    required=True,
    help="Workflow: a name in annotation_schemas/ (or --schemas-dir), or a YAML file's path.",
)
@click.option("--people-per-item", type=click.IntRange(min=1), default=None)
@click.option("--subtask", "subtasks", multiple=True, help="Only these subtasks (repeatable).")
@click.option("--language", "languages", multiple=True, help="Only scenarios in these languages: zh, en, mixed.")
@click.option("--high-risk-only", is_flag=True)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Only responses of these models (repeatable); for a live_session workflow: the companion model (once).",
)
@click.option("--variant", "variants", multiple=True, type=click.Choice(["with_sap", "without_sap"]))
@click.option("--flagged-only", is_flag=True, help="Only responses flagged for adjudication.")
@click.option("--gold", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--schemas-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None)
@click.option(
    "--assignment",
    type=click.Choice(["fill", "spread"]),
    default="fill",
    show_default=True,
    help="Queue order: fill items to their quota first (small teams get decided items early), or least-answered first.",
)
@click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="live_session only: the companion's OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1.",
)
@click.option(
    "--api-key-env",
    default=None,
    metavar="VAR",
    help="live_session only: the NAME of the environment variable holding the companion's API key, read by the "
    "server at each call (default H2H_LIVE_API_KEY; unset: no key sent). The key itself is never an option.",
)
@click.option(
    "--token-budget",
    type=click.IntRange(min=1),
    default=None,
    help="live_session only: tokens (prompt + reply, all sessions) the campaign may spend (default: the workflow's).",
)
@click.option(
    "--crisis-classifier",
    "classifier_url",
    default=None,
    metavar="URL",
    help="live_session only: an HTTP crisis classifier consulted beside the built-in lexicon.",
)
@click.option(
    "--audit-share",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=None,
    help="adjudication only: add a seeded random audit sample of this share of the judged responses, flagged or "
    "not (the labelled set of the prediction-powered scores); overrides the workflow's audit:.",
)
@click.option("--audit-items", type=click.IntRange(min=1), default=None, help="adjudication only: audit N responses.")
@click.option("--audit-seed", type=click.IntRange(min=0), default=0, show_default=True, help="The audit draw's seed.")
@db_option
def create(
    name: str,
    schema_name: str,
    people_per_item: int | None,
    subtasks: tuple[str, ...],
    languages: tuple[str, ...],
    high_risk_only: bool,
    models: tuple[str, ...],
    variants: tuple[str, ...],
    flagged_only: bool,
    gold: Path | None,
    schemas_dir: Path | None,
    assignment: str,
    base_url: str | None,
    api_key_env: str | None,
    token_budget: int | None,
    classifier_url: str | None,
    audit_share: float | None,
    audit_items: int | None,
    audit_seed: int,
    db_url: str | None,
) -> None:
    """Create campaign NAME over the targets the schema and filters pick.

    A live_session workflow (live_safety) names its companion: exactly one --model and --base-url; the companion is
    asked once first, and nothing is stored when it is down or does not serve the model.
    """
    from studio.db import write_session
    from studio.services.campaigns import create_campaign
    from studio.services.targets import TargetSelection

    schema = with_audit(resolve_schema(schema_name, schemas_dir), share=audit_share, items=audit_items, seed=audit_seed)
    live = {
        "base_url": base_url,
        "api_key_env": api_key_env,
        "token_budget": token_budget,
        "classifier_url": classifier_url,
    }
    refused = {"--variant": bool(variants), "--flagged-only": flagged_only}
    endpoint = live_endpoint_option(schema, models=models, live=live, refused=refused)
    if endpoint is not None:
        probe_companion(endpoint, schema)
    selection = TargetSelection(
        subtasks=list(subtasks) or None,
        languages=list(languages) or None,
        high_risk_only=high_risk_only,
        models=(list(models) or None) if endpoint is None else None,  # a live campaign's --model is its companion
        variants=list(variants) or None,
        flagged_only=flagged_only,
    )
    entries = read_gold(gold) if gold else None
    with open_store(db_url) as engine, write_session(engine) as session:
        created = create_campaign(
            session,
            name=name,
            schema=schema,
            people_per_item=people_per_item,
            selection=selection,
            gold=entries,
            actor="cli",
            assignment=assignment,
            live_endpoint=endpoint,
        )
    click.echo(
        f"created campaign {created.name} ({created.schema_name}, {created.people_per_item} per item, "
        f"queue: {created.assignment})"
    )
    if endpoint is not None:
        click.echo(f"companion: {endpoint.model} at {endpoint.base_url} (API key from ${endpoint.api_key_env})")


@campaign.command("list")
@db_option
def list_(db_url: str | None) -> None:
    """List campaigns: workflow, status, people per item, progress, people who answered, roles that may work."""
    from studio.db import read_session
    from studio.services.campaigns import campaign_overviews

    with open_store(db_url) as engine, read_session(engine) as session:
        for summary in campaign_overviews(session):
            progress = summary.progress
            click.echo(
                f"{summary.name}\t{summary.schema_name}\t{summary.status}\t{summary.people_per_item}/item\t"
                f"complete at {summary.complete_at}\tqueue: {summary.assignment}\t"
                f"{progress['answers']} answers\t{summary.complete}\t"
                f"{summary.people} people\t{','.join(summary.eligible_roles)}"
            )


@campaign.command("assign")
@click.argument("name")
@click.option("--role", "roles", multiple=True, required=True, type=click.Choice(ROLES), help="Repeatable.")
@db_option
def assign(name: str, roles: tuple[str, ...], db_url: str | None) -> None:
    """Say which roles may work on campaign NAME (replaces its workflow's eligible roles for this campaign)."""
    from studio.db import write_session
    from studio.services.campaigns import set_eligible_roles

    with open_store(db_url) as engine, write_session(engine) as session:
        changed = set_eligible_roles(session, name=name, roles=roles, actor="cli")
    click.echo(f"campaign {changed.name}: {', '.join(changed.eligible_roles)} may work on it")


def _set_status(name: str, status: str, db_url: str | None, *, decide_below_quota: bool = False) -> None:
    from studio.db import write_session
    from studio.services.campaigns import set_campaign_status

    with open_store(db_url) as engine, write_session(engine) as session:
        changed = set_campaign_status(
            session, name=name, status=status, actor="cli", decide_below_quota=decide_below_quota
        )
    click.echo(f"campaign {name} is {status}")
    click.echo(changed.message)


@campaign.command("close")
@click.argument("name")
@click.option(
    "--decide-below-quota",
    is_flag=True,
    help="Decide the items short of their quota on the answers they have (recorded). Default: they stay undecided.",
)
@db_option
def close(name: str, decide_below_quota: bool, db_url: str | None) -> None:
    """Close campaign NAME: no more items, answers or revisions. Says how many items are below quota and what
    happens to them."""
    _set_status(name, "closed", db_url, decide_below_quota=decide_below_quota)


@campaign.command("open")
@click.argument("name")
@db_option
def open_(name: str, db_url: str | None) -> None:
    """Reopen campaign NAME."""
    _set_status(name, "open", db_url)


COMMANDS: tuple[click.Command, ...] = (campaign,)
