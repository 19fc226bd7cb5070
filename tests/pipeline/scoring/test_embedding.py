"""Similarity: the offline MiniLM embedder, the clip to [0, 1], and the loud fallback from BGE-M3."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence

import numpy as np
import pytest

from pipeline.scoring.embedding import MINILM_NAME, Embedder, cosine_similarities, load_embedder


def test_minilm_name_and_unit_vectors(minilm: Embedder) -> None:
    assert minilm.name == MINILM_NAME == "minilm:all-MiniLM-L6-v2"
    assert minilm.fallback_reason is None
    vectors = minilm.encode(["hello there", "你好", ""])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert minilm.encode([]).shape == (0, 384)


def test_identical_texts_have_similarity_one(minilm: Embedder) -> None:
    texts = ["I'm always here for you.", "别担心，我一直都在你身边。"]
    assert cosine_similarities(minilm, texts, texts) == pytest.approx([1.0, 1.0], abs=1e-6)


@pytest.mark.parametrize(
    ("reference", "paraphrase", "unrelated"),
    [
        (
            "I'm so sorry you had such a rough day at work.",
            "That sounds like a really hard day at your job, I'm sorry.",
            "The train to Hangzhou leaves at nine from platform four.",
        ),
        (
            "今天工作好累，辛苦你了，早点休息吧。",
            "工作一天辛苦了，累了就早点休息。",
            "明天上午九点的火车去杭州，记得带身份证。",
        ),
    ],
    ids=["english", "chinese"],
)
def test_paraphrase_scores_higher_than_unrelated(
    minilm: Embedder, reference: str, paraphrase: str, unrelated: str
) -> None:
    close, far = cosine_similarities(minilm, [paraphrase, unrelated], [reference, reference])
    assert 0.0 <= far < close <= 1.0


class _FixedVectors:
    """A stand-in model with known vectors, to check the clip (a real model rarely gives negative cosines)."""

    name = "fixed"
    fallback_reason = None

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.append(list(texts))
        table = {"up": [1.0, 0.0], "down": [-1.0, 0.0], "side": [0.6, 0.8]}
        return np.array([table[text] for text in texts])


def test_negative_cosine_is_clipped_to_zero_and_each_text_is_embedded_once() -> None:
    model = _FixedVectors()
    values = cosine_similarities(model, ["down", "side", "up", "side"], ["up", "up", "up", "up"])
    assert values == pytest.approx([0.0, 0.6, 1.0, 0.6])
    assert model.seen == [["up", "down", "side"]]


def test_mismatched_lengths_are_refused(minilm: Embedder) -> None:
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        cosine_similarities(minilm, ["a", "b"], ["a"])


def test_none_means_no_embedder_and_unknown_names_are_refused() -> None:
    assert load_embedder("none") is None
    with pytest.raises(ValueError, match="unknown embedder 'bge-large'"):
        load_embedder("bge-large")


@pytest.mark.skipif(importlib.util.find_spec("FlagEmbedding") is not None, reason="FlagEmbedding is installed here")
def test_bge_m3_falls_back_to_minilm_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pipeline.scoring.embedding"):
        embedder = load_embedder("bge-m3", batch_size=7)  # its own cache entry, so the load really happens here
    assert embedder is not None and embedder.name == MINILM_NAME
    assert embedder.fallback_reason is not None and "FlagEmbedding" in embedder.fallback_reason
    assert any("falling back to minilm" in record.getMessage() for record in caplog.records)


def test_a_local_model_is_named_by_its_path_and_content(tmp_path) -> None:
    from pipeline.scoring.embedding import bge_m3_identity, directory_digest

    model = tmp_path / "bge"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\x00" * 10)
    name = bge_m3_identity(str(model))
    assert name == f"bge-m3:{model.resolve()}#sha256:{directory_digest(model)[:16]}"
    (model / "model.safetensors").write_bytes(b"\x01" * 10)
    assert bge_m3_identity(str(model)) != name  # other weights, another signature


def test_the_model_comes_from_the_argument_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.scoring.embedding import requested_bge_m3_model

    monkeypatch.delenv("H2H_BGE_M3_MODEL", raising=False)
    assert requested_bge_m3_model() is None
    monkeypatch.setenv("H2H_BGE_M3_MODEL", "/models/bge-m3")
    assert requested_bge_m3_model() == "/models/bge-m3"
    assert requested_bge_m3_model("/elsewhere") == "/elsewhere"


@pytest.mark.skipif(importlib.util.find_spec("FlagEmbedding") is not None, reason="FlagEmbedding is installed here")
def test_a_named_model_that_cannot_load_is_an_error_never_a_fallback(tmp_path) -> None:
    from pipeline.scoring.embedding import EmbedderUnavailable

    with pytest.raises(EmbedderUnavailable, match=f"cannot load the BGE-M3 model '{tmp_path}': BGE-M3 unavailable"):
        load_embedder("bge-m3", model=str(tmp_path))


def test_the_batch_size_follows_the_device_unless_one_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """256 texts per batch on a GPU, 32 on a CPU (benchmarks/bench_bge_m3.py measured both), or the one asked for."""
    import pipeline.scoring.embedding as embedding

    loads: list[tuple[str, str, int]] = []

    def recorded(source: str, device: str, batch_size: int) -> object:
        loads.append((source, device, batch_size))
        return object()

    monkeypatch.setattr(embedding, "_load_bge_m3", recorded)
    for device in ("cuda:3", "cpu"):
        load_embedder("bge-m3", model=f"/models/batch-test-{device}", device=device)
    load_embedder("bge-m3", model="/models/batch-test-asked", device="cuda:3", batch_size=5)
    assert loads == [
        ("/models/batch-test-cuda:3", "cuda:3", 256),
        ("/models/batch-test-cpu", "cpu", 32),
        ("/models/batch-test-asked", "cuda:3", 5),
    ]
    assert embedding.default_batch_size("cuda") == 256 and embedding.default_batch_size("cpu") == 32
