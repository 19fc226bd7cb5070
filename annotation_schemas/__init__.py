"""The annotation workflows, one YAML file each — data, not code.

This folder is the top-level ``annotation_schemas/`` of the repository. It ships inside the wheel as the package
``studio.annotation_schemas`` (``pyproject.toml`` maps it there), so ``importlib.resources`` finds the same files in a
checkout, an editable install and a wheel. ``studio.workflows`` reads them; ARCHITECTURE.md says how to add one.
"""
