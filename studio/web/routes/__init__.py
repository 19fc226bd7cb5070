"""The REST API's routers (``/v1/...``), one module per area; ``studio.web.api.create_api`` includes them all.

Every route declares the caller (``studio.web.deps.CallerDep``), opens the one session its work needs in it and
calls the use cases of ``studio.usecases``: no route checks a role or writes SQL.
"""
