"""The studio as ``h2h studio`` serves it (uvicorn, one worker), plus a no-op endpoint for the load benchmark.

``GET /api/v1/_noop`` is added to the *same* API sub-application the real app factory mounts, and it
authenticates the way every real route does (the ``CallerDep`` dependency, then the one session the route opens in
it, holding the token lookup), so driving it measures HTTP + routing + auth and nothing else. Run:
``python benchmarks/load_server.py --db sqlite:///bench.sqlite --port 8765``.
"""

import argparse

from fastapi import FastAPI
from starlette.routing import Mount

NOOP_PATH = "/v1/_noop"


def _mounted_api(app: FastAPI) -> FastAPI:
    """The REST sub-application ``studio.web.app.create_app`` mounts at ``/api``."""
    for route in app.routes:
        if isinstance(route, Mount) and route.path == "/api" and isinstance(route.app, FastAPI):
            return route.app
    raise RuntimeError("studio.web.app.create_app did not mount the REST API at /api")


def build_app(database_url: str) -> FastAPI:
    """The real studio app over ``database_url`` with ``GET /api/v1/_noop`` (authenticated) added to its API."""
    from studio.settings import get_settings
    from studio.web.app import create_app
    from studio.web.deps import CallerDep

    app = create_app(get_settings(database_url=database_url))
    api = _mounted_api(app)

    @api.get(NOOP_PATH, include_in_schema=False)
    def noop(caller: CallerDep) -> dict[str, bool]:
        with caller.reading():  # what every real route does first: one session, the caller resolved in it
            pass
        return {"ok": True}

    return app


def main() -> None:
    """Serve :func:`build_app` with uvicorn until stopped, configured as ``h2h studio`` configures it (the head
    timeout and the connection cap per address of :mod:`studio.web.transport`)."""
    import uvicorn

    from studio.commands.serve import freeze_startup_heap, server_config

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, help="store URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = build_app(args.db)
    freeze_startup_heap()  # as h2h studio does once its app is built
    uvicorn.Server(server_config(app, host=args.host, port=args.port)).run()


if __name__ == "__main__":
    main()
