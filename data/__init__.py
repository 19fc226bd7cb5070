"""The data the pipeline and the studio ship — no code: prompts, the SAP block, the judge rubric, the demo
scenarios and responses, and the curation lexicons.

This folder is the top-level ``data/`` of the repository. It ships inside the wheel as the package ``pipeline.data``
(``pyproject.toml`` maps it there) and is found through :mod:`pipeline.paths`. ``H2H_DATA_DIR`` points the pipeline at
another folder of the same layout (``prompts/``, ``demo/``, ``curation/``) without touching the installed one.
"""
