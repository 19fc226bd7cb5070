"""Odd values in every REST input are refused with a 4xx naming the field — never a 500 — on SQLite and PostgreSQL.

The routes are read from the API's own OpenAPI document, so a new route is swept too: every path and query parameter
and every top-level field of a JSON body that is text or a whole number gets, one at a time, a NUL character, a lone
surrogate (in JSON bodies; a URL cannot carry one), whole numbers past what the store can hold (2**70, -2**70,
10**20) and -1, with the other inputs plausible. Each answer must be below 500, and a 422 must name the field.
The callers are the roles the routes serve (an annotator for answering, a curator for curation, an admin for
administration, a researcher for results), so the values reach the code behind the permission checks.
Checked on the old code: a NUL in a login on PostgreSQL, ``item_id`` 2**70 and ``?page=10**20`` were 500s (more in
the module's commit message).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from studio.models import UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD

NUL = "a\u0000b"
SURROGATE = "\\ud800"  # written into the JSON text as an escape: a lone surrogate once parsed
HUGE = [2**70, -(2**70), 10**20, 2**62, 2**31, -1]  # 2**31: past PostgreSQL's integer ids
ROLE_OF_PREFIX = {"/v1/admin": "admin", "/v1/curation": "curator", "/v1/results": "researcher"}
#: Plausible values for the inputs not under test.
PLAUSIBLE = {
    "name": "vote",
    "campaign": "vote",
    "username": "annotator",
    "scenario_id": "s-1",
    "schema": "crowd_vote",
    "role": "annotator",
    "metric": "S",
    "password": PASSWORD,
}


@pytest.fixture
def api(corpus: Engine, campaign: Any, users: dict[str, UserPublic], db_url: str) -> Iterator[tuple[str, dict]]:
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url:
        tokens = {
            role: httpx.post(f"{url}/api/v1/login", json={"username": role, "password": PASSWORD}).json()["token"]
            for role in ("annotator", "curator", "admin", "researcher")
        }
        yield f"{url}/api", tokens


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method.upper(), operation


def kind(schema: dict[str, Any]) -> str | None:
    """``integer`` or ``string`` (also inside ``anyOf`` with null), else None."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") in ("integer", "string") and "enum" not in option and "format" not in option:
            return str(option["type"])
    return None


def plausible(name: str, schema: dict[str, Any], document: dict[str, Any]) -> Any:
    schema = resolved(schema, document)
    option = next((item for item in schema.get("anyOf", [schema]) if item.get("type") != "null"), {})
    option = resolved(option, document)
    if "enum" in option:
        return option["enum"][0]
    return {
        "integer": 1,
        "number": 1.0,
        "boolean": False,
        "array": [],
        "object": {"verdict": "keep", "subtask_label": "dialogue_base"} if name == "answers" else {},
    }.get(option.get("type", "string"), PLAUSIBLE.get(name, "x"))


def resolved(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    reference = schema.get("$ref")
    if not reference:
        return schema
    found: Any = document
    for part in reference.removeprefix("#/").split("/"):
        found = found[part]
    return dict(found)


def json_body(operation: dict[str, Any], document: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    return resolved(content["application/json"]["schema"], document)


def cases(document: dict[str, Any]) -> Iterator[tuple[str, str, str, str, Any, dict[str, Any]]]:
    """(method, path, where, field, odd value, operation) for every odd value of every text or whole-number input."""
    for path, method, operation in operations(document):
        inputs = [(p["in"], p["name"], p["schema"]) for p in operation.get("parameters", [])]
        body = json_body(operation, document)
        if body is not None:
            inputs += [("body", name, schema) for name, schema in body.get("properties", {}).items()]
        for where, name, schema in inputs:
            odd: list[Any] = {"string": [NUL], "integer": HUGE}.get(kind(resolved(schema, document)) or "", [])
            if where == "body" and kind(resolved(schema, document)) == "string":
                odd = [*odd, SURROGATE]
            for value in odd:
                yield method, path, where, name, value, operation


def send(base: str, token: str, document: dict[str, Any], case: tuple[Any, ...], odd: bool = True) -> httpx.Response:
    """The case's request: required inputs plausible, the one under test odd (or, with ``odd=False``, plausible)."""
    method, path, where, field, value, operation = case
    parameters = operation.get("parameters", [])
    params = {p["name"]: plausible(p["name"], p["schema"], document) for p in parameters if p.get("required")}
    if where != "body":
        params[field] = value if odd else plausible(field, {"type": kind_of(parameters, field)}, document)
    url_path = path
    for parameter in parameters:
        if parameter["in"] == "path":
            url_path = url_path.replace("{" + parameter["name"] + "}", quote(str(params[parameter["name"]]), safe=""))
    query = {p["name"]: str(params[p["name"]]) for p in parameters if p["in"] == "query" and p["name"] in params}
    content = None
    body_schema = json_body(operation, document)
    if body_schema is not None:
        required = set(body_schema.get("required", []))
        properties = body_schema.get("properties", {})
        body = {name: plausible(name, schema, document) for name, schema in properties.items() if name in required}
        if where == "body":
            body[field] = "@@ODD@@" if odd else plausible(field, properties[field], document)
        odd_text = json.dumps(value) if value != SURROGATE else '"' + SURROGATE + '"'
        content = json.dumps(body).replace('"@@ODD@@"', odd_text).encode()
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    return httpx.request(method, base + url_path, params=query, content=content, headers=headers, timeout=60)


def kind_of(parameters: list[dict[str, Any]], name: str) -> str:
    return next(kind(p["schema"]) or "string" for p in parameters if p["name"] == name)


def answer(reply: httpx.Response) -> tuple[int, str]:
    try:
        return reply.status_code, str(reply.json().get("detail", ""))
    except ValueError:
        return reply.status_code, reply.text


def caller_role(path: str) -> str:
    return next((role for prefix, role in ROLE_OF_PREFIX.items() if path.startswith(prefix)), "annotator")


def test_every_text_and_number_input_of_every_route_refuses_odd_values_with_a_4xx_naming_it(
    api: tuple[str, dict[str, str]],
) -> None:
    base, tokens = api
    document = httpx.get(f"{base}/v1/openapi.json").json()
    failures = []
    swept = 0
    for case in cases(document):
        method, path, where, field, value, _operation = case
        token = "" if path == "/v1/login" else tokens[caller_role(path)]
        reply = send(base, token, document, case)
        swept += 1
        # A 422 names the field, unless the odd value made no difference (another input was refused first).
        named = reply.status_code != 422 or field in answer(reply)[1]
        if not named:
            named = answer(send(base, token, document, case, odd=False)) == answer(reply)
        if reply.status_code >= 500 or not named:
            failures.append(f"{method} {path} {where}:{field}={value!r} -> {reply.status_code} {reply.text[:160]}")
    assert swept > 100, swept  # the sweep reached the routes
    assert failures == [], "\n".join(failures)


def test_a_nul_in_the_sign_in_form_is_refused_naming_the_field(users: dict[str, UserPublic], db_url: str) -> None:
    from studio.web.app import create_app

    with serve_in_thread(create_app(get_settings(database_url=db_url))) as base:
        for form in ({"username": NUL, "password": PASSWORD}, {"username": "annotator", "password": NUL}):
            reply = httpx.post(f"{base}/login", data=form, timeout=60)
            assert 400 <= reply.status_code < 500, reply.text
            assert "h2h_session" not in reply.cookies
        named = httpx.post(f"{base}/login", data={"username": NUL, "password": PASSWORD}, timeout=60)
        assert "username" in named.text, named.text
        api = httpx.post(f"{base}/api/v1/login", json={"username": NUL, "password": PASSWORD}, timeout=60)
        assert api.status_code == 422 and api.json()["detail"].startswith("username:"), api.text
