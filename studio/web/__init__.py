"""The studio's front doors on the web: the REST API (``routes``), the login and logout pages, the middleware, and
the application factory (``app.create_app``) that mounts the Gradio UI (``studio.ui``) beside them."""
