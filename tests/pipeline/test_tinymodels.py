"""The tiny random-weight models: built offline from the bundled data, identical on every build, loadable."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.commands.tinymodels import tiny_models_command
from pipeline.tinymodels import RECIPE_FILE, TinyRecipe, build_tiny_models, cached_tiny_models, training_corpus


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "models"
    result = CliRunner().invoke(tiny_models_command, ["--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"chat model: {out / 'chat'}" in result.output and f"embedder: {out / 'embedder'}" in result.output
    return out


def files_of(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_the_same_recipe_gives_the_same_files(built: Path, tmp_path: Path) -> None:
    again = build_tiny_models(tmp_path / "again")
    assert files_of(again.root) == files_of(built)  # weights, tokenizers, configs: byte for byte
    assert {"chat/model.safetensors", "embedder/model.safetensors", RECIPE_FILE} <= set(files_of(built))
    assert build_tiny_models(built).digest == again.digest  # a finished build is reused


def test_the_digest_follows_the_recipe_and_a_foreign_directory_is_refused(built: Path, tmp_path: Path) -> None:
    corpus = training_corpus()
    assert TinyRecipe().digest(corpus) != TinyRecipe(seed=1).digest(corpus)
    assert TinyRecipe().digest(corpus) != TinyRecipe().digest(corpus[:-1])
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    result = CliRunner().invoke(tiny_models_command, ["--out", str(tmp_path / "busy")])
    assert result.exit_code == 1 and "not empty and not a build of this recipe" in result.output
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_the_chat_model_has_a_chat_template_and_generates(built: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built / "chat")
    messages = [{"role": "system", "content": "你是小雨。"}, {"role": "user", "content": "今天好累"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert (
        prompt
        == "<|im_start|>system\n你是小雨。<|im_end|>\n<|im_start|>user\n今天好累<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tokenizer.decode(tokenizer(prompt)["input_ids"]) == prompt  # byte-level BPE: Chinese round-trips
    vocabulary = list(range(len(tokenizer)))
    assert not any("\x00" in tokenizer.decode([token]) for token in vocabulary)  # it cannot write a NUL
    model = AutoModelForCausalLM.from_pretrained(built / "chat")
    config = model.config
    assert (config.hidden_size // config.num_attention_heads, config.num_hidden_layers) == (
        64,
        2,
    )  # vLLM's CPU needs 64
    encoded = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        generated = model.generate(**encoded, max_new_tokens=5, do_sample=False)
    assert generated.shape[1] == encoded["input_ids"].shape[1] + 5


def test_the_embedder_is_an_xlm_roberta_with_cls_first(built: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built / "embedder")
    ids = tokenizer("晚安")["input_ids"]
    assert ids[0] == tokenizer.cls_token_id == 0 and ids[-1] == tokenizer.sep_token_id == 2
    assert tokenizer.pad_token_id == 1
    assert type(AutoModel.from_pretrained(built / "embedder")).__name__ == "XLMRobertaModel"


def test_the_cache_builds_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = cached_tiny_models()
    assert first.root == tmp_path / "h2h-studio" / "tiny-models" / first.digest
    assert files_of(first.root) == files_of(built)
    stamp = (first.chat / "model.safetensors").stat().st_mtime_ns
    assert cached_tiny_models().root == first.root
    assert (first.chat / "model.safetensors").stat().st_mtime_ns == stamp
