"""Where the data files shipped inside the package live: prompts, the SAP block, the judge rubric, the demo data.

They live in the repository's top-level ``data/`` folder, shipped inside the wheel as the package ``pipeline.data``
(``pyproject.toml`` maps it) and found with :mod:`importlib.resources`, so a wheel install has them as well as a
checkout. ``H2H_DATA_DIR`` points at another folder of the same layout
(``prompts/``, ``demo/``, ``curation/``) — e.g. a team's own prompt versions — without editing the installed package.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def bundled_resources() -> Path:
    """The bundled ``data/`` folder (the package ``pipeline.data``) of the installed package.

    A wheel or editable install unpacks package data as plain files, so the traversable is a real directory.
    """
    return Path(str(resources.files("pipeline.data")))


def data_dir() -> Path:
    """Return ``$H2H_DATA_DIR`` where set, else the bundled resources folder."""
    override = os.environ.get("H2H_DATA_DIR")
    return Path(override) if override else bundled_resources()


def prompts_dir() -> Path:
    """``prompts/``: the prompt templates, the SAP block and the judge rubric."""
    return data_dir() / "prompts"


def demo_dir() -> Path:
    """``demo/``: the bundled demo scenarios and demo-system responses."""
    return data_dir() / "demo"
