"""The Admin tab's import part: scenario files uploaded, every line checked (each problem shown as
``file:line: field: problem``), stored only when the check is clean and the person presses Import. Handlers call
``studio.usecases.imports``, which authorises each call (``AdminPolicy.import_scenarios``); the checked upload waits
server-side in the event session's ``gr.State``, never in the browser."""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from pathlib import Path
from typing import Any

from studio.services.imports import UploadedFile
from studio.ui import admin_views as views
from studio.ui.calls import OpenContext, reading, writing
from studio.usecases import imports

PRIVATE: dict[str, Any] = {"api_visibility": "private"}


def uploads_only(paths: list[str] | None, folder: Path) -> list[str]:
    """``paths`` when each is a regular file inside ``folder`` (the studio's upload folder), links resolved; else
    ``gr.Error`` naming the field, and nothing is read.

    Defence in depth behind ``studio.web.sessions.GradioGate``, which lets an event name only files its caller
    uploaded: Gradio itself reads any path an event names (for a mounted app it checks none).
    """
    import gradio as gr

    root = folder.resolve()
    for path in paths or []:
        try:
            real = Path(path).resolve()
        except (ValueError, OSError):  # a NUL, a path no file can have
            real = root
        if not real.is_relative_to(root) or real == root or not real.is_file():
            raise gr.Error("file: not an upload of yours; upload the file again", duration=10, print_exception=False)
    return list(paths or [])


class ImportsPanel:
    """The components of the import part and the handlers that fill them."""

    def __init__(self, open_context: OpenContext, upload_limit_bytes: int) -> None:
        self.open_context = open_context
        self.upload_limit_bytes = upload_limit_bytes

    def build(self) -> None:
        import gradio as gr

        megabytes = self.upload_limit_bytes / (1024 * 1024)
        gr.Markdown(
            "Upload scenario files (`.jsonl`): our scenario format, or files of the public H2HTalk release named "
            f"after their subtask (e.g. `dialogue_emotion.jsonl`). At most {megabytes:g} MiB in all. Every line is "
            "checked first; nothing is stored until you press Import, and nothing at all while a problem remains."
        )
        self.staged = gr.State(None)
        self.upload = gr.File(
            label="Scenario files",
            file_count="multiple",
            file_types=[".jsonl"],
            type="filepath",
            elem_id="h2h-import-files",
        )
        # Gradio's cache of this studio (GRADIO_TEMP_DIR as the component was built): where its uploads land.
        self.upload_folder = Path(self.upload.GRADIO_CACHE)
        self.import_problems = gr.HTML(elem_id="h2h-import-problems", js_on_load=None)
        self.import_summary = gr.HTML(elem_id="h2h-import-summary", js_on_load=None)
        with gr.Row():
            self.confirm = gr.Button("Import", variant="primary", interactive=False, elem_id="h2h-import-confirm")
            self.cancel = gr.Button("Cancel", interactive=False, elem_id="h2h-import-cancel")

    def wire(self) -> None:
        shown = [self.import_problems, self.import_summary, self.staged, self.confirm, self.cancel, self.upload]
        self.upload.upload(self._on_check(), inputs=[self.upload, self.staged], outputs=shown, **PRIVATE)
        self.confirm.click(self._on_import(), inputs=[self.staged], outputs=shown, trigger_mode="once", **PRIVATE)
        self.cancel.click(self._on_cancel(), inputs=[self.staged], outputs=shown, **PRIVATE)

    @staticmethod
    def _import_values(problems: str, summary: str, staged: Any) -> list[Any]:
        import gradio as gr

        ready = staged is not None
        return [problems, summary, staged, gr.Button(interactive=ready), gr.Button(interactive=ready), None]

    def _on_check(self) -> Any:
        import gradio as gr

        def on_check(paths: list[str] | None, previous: Any, request: gr.Request) -> list[Any]:
            received = [UploadedFile(Path(path).name, Path(path)) for path in uploads_only(paths, self.upload_folder)]
            with reading(self.open_context, request) as (session, caller):
                imports.cancel_upload(caller=caller, staged=previous)
                check = imports.check_upload(
                    session, caller=caller, files=received, limit_bytes=self.upload_limit_bytes
                )
            if not check.ok:
                return self._import_values(views.problems_html(check.problems), "", None)
            return self._import_values("", views.check_html(check), check.staged)

        return on_check

    def _on_import(self) -> Any:
        import gradio as gr

        def on_import(staged: Any, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                report = imports.store_upload(session, caller=caller, staged=staged)
            return self._import_values("", views.stored_html(report.scenarios_added, report.scenarios_updated), None)

        return on_import

    def _on_cancel(self) -> Any:
        import gradio as gr

        def on_cancel(staged: Any, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (_session, caller):
                imports.cancel_upload(caller=caller, staged=staged)
            return self._import_values("", views.message_html("Cancelled: nothing was stored."), None)

        return on_cancel
