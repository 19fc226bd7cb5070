"""Tiny random-weight models made offline from the bundled data: the real engines without real weights.

Two models, built in seconds on a CPU, for the tests, the benchmarks and anyone who wants to try vLLM and
BGE-M3 end to end before fetching weights:

- ``chat/``: a ``Qwen2ForCausalLM`` (hidden 128, 2 layers, 2 heads, so head_dim 64 — vLLM's CPU attention
  refuses head_dim 16) with a ChatML chat template, loadable by ``vllm.LLM`` and ``vllm serve``;
- ``embedder/``: an ``XLMRobertaModel`` (BGE-M3's architecture), loadable by FlagEmbedding's ``BGEM3FlagModel``.

Each has a byte-level BPE tokenizer trained with ``tokenizers`` on the bundled demo scenarios and prompts, so
Chinese and English text both tokenise. The weights are drawn with numpy from fixed seeds, one generator per
parameter name, so the same recipe gives the same files whatever torch's own initialisation does. Nothing is
downloaded. Their output is noise: they exercise the engines, not the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pipeline.paths import bundled_resources

logger = logging.getLogger(__name__)

#: Bumped when the way the models are built changes (part of the cache digest).
BUILDER_VERSION = 2
RECIPE_FILE = "recipe.json"
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHAT_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# XLM-RoBERTa's own order: <s>=0, <pad>=1, </s>=2, <unk>=3 (its position ids start after the padding id).
EMBEDDER_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


@dataclass(frozen=True)
class TinyRecipe:
    """Everything that decides the two models' files (its digest names the cache entry)."""

    vocab_size: int = 4096
    hidden_size: int = 128
    layers: int = 2
    heads: int = 2
    intermediate_size: int = 256
    chat_max_positions: int = 8192
    embedder_max_positions: int = 2048
    seed: int = 20250703
    # Far above the usual 0.02, so that outputs depend on their inputs: at 0.02 the encoder gives every text the
    # same CLS vector to 1e-4 (all cosines ~1.0) and the chat model writes the same noise for different prompts
    # (22 distinct texts for 67 prompts); at 0.5 the demo pairs' cosines spread over ~0.55-0.9 and every prompt
    # gets its own text, so a response filed under the wrong key or a wrong pooling shows in the tests.
    init_std: float = 0.5
    builder: int = BUILDER_VERSION
    # The files' formats follow the libraries that write them (a transformers 5 config is not a 4.x one).
    tokenizers_version: str = field(default_factory=lambda: version("tokenizers"))
    transformers_version: str = field(default_factory=lambda: version("transformers"))

    def digest(self, corpus: list[str]) -> str:
        """A short hex digest of the recipe and the training text."""
        hasher = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode())
        for text in corpus:
            hasher.update(text.encode("utf-8") + b"\0")
        return hasher.hexdigest()[:16]


@dataclass(frozen=True)
class TinyModels:
    """Where the two built models are: ``chat`` (Qwen2) and ``embedder`` (XLM-RoBERTa) directories."""

    root: Path
    digest: str

    @property
    def chat(self) -> Path:
        return self.root / "chat"

    @property
    def embedder(self) -> Path:
        return self.root / "embedder"


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value, in document order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def training_corpus() -> list[str]:
    """The tokenizer's training text: every string of the bundled demo scenarios, then every bundled prompt."""
    resources = bundled_resources()
    lines = (resources / "demo" / "scenarios.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [text for line in lines if line.strip() for text in _strings(json.loads(line))]
    texts += [path.read_text(encoding="utf-8") for path in sorted((resources / "prompts").glob("*.md"))]
    return texts


def train_tokenizer(corpus: list[str], *, vocab_size: int, special_tokens: tuple[str, ...]) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on ``corpus`` (every byte but NUL in its alphabet); the
    special tokens take the first ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # Every byte but NUL: a random model would otherwise write NULs now and then, which no store can hold as text
    # (the records refuse them). The bundled text has none, so nothing it needs is lost.
    [(nul, _)] = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str("\x00")
    alphabet = [char for char in pre_tokenizers.ByteLevel.alphabet() if char != nul]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(special_tokens), initial_alphabet=alphabet, show_progress=False
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return tokenizer


def fill_weights(model: Any, *, seed: int, std: float) -> None:
    """Set every parameter from numpy: norms' weights 1, biases 0, the rest N(0, std).

    One generator per parameter, seeded by ``seed`` and the parameter's name: the values depend on
    neither the order of parameters nor torch's initialisation code.
    """
    import numpy as np
    import torch

    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                values = np.zeros(tuple(parameter.shape))
            elif "norm" in name.lower():
                values = np.ones(tuple(parameter.shape))
            else:
                generator = np.random.default_rng([seed, zlib.crc32(name.encode())])
                values = generator.normal(0.0, std, size=tuple(parameter.shape))
            parameter.copy_(torch.from_numpy(values.astype(np.float32)))


def build_chat_model(directory: Path, *, recipe: TinyRecipe, corpus: list[str]) -> None:
    """Save a random-weight Qwen2 chat model (weights, config, tokenizer, chat template) into ``directory``."""
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tokenizer = train_tokenizer(corpus, vocab_size=recipe.vocab_size, special_tokens=CHAT_SPECIAL_TOKENS)
    end, start, stop = (tokenizer.token_to_id(token) for token in CHAT_SPECIAL_TOKENS)
    config = Qwen2Config(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size, num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads, num_key_value_heads=recipe.heads,
        max_position_embeddings=recipe.chat_max_positions, tie_word_embeddings=True,
        bos_token_id=start, eos_token_id=stop, pad_token_id=end, dtype="float32",
    )  # fmt: skip
    model = Qwen2ForCausalLM(config)
    fill_weights(model, seed=recipe.seed, std=recipe.init_std)
    model.generation_config.eos_token_id = [stop, end]
    model.save_pretrained(directory, safe_serialization=True)
    fast_tokenizer: Any = PreTrainedTokenizerFast  # transformers leaves its __init__ untyped
    wrapped = fast_tokenizer(
        tokenizer_object=tokenizer, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        unk_token=None, model_max_length=recipe.chat_max_positions, chat_template=CHAT_TEMPLATE,
    )  # fmt: skip
    wrapped.save_pretrained(directory)


def build_embedder_model(directory: Path, *, recipe: TinyRecipe, corpus: list[str]) -> None:
    """Save a random-weight XLM-RoBERTa encoder (BGE-M3's architecture) and its tokenizer into ``directory``."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    tokenizer = train_tokenizer(corpus, vocab_size=recipe.vocab_size, special_tokens=EMBEDDER_SPECIAL_TOKENS)
    begin, pad, end = (tokenizer.token_to_id(token) for token in EMBEDDER_SPECIAL_TOKENS[:3])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", begin), ("</s>", end)]
    )
    config = XLMRobertaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=recipe.hidden_size, num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads, intermediate_size=recipe.intermediate_size,
        max_position_embeddings=recipe.embedder_max_positions + pad + 1, bos_token_id=begin, pad_token_id=pad,
        eos_token_id=end, dtype="float32",
    )  # fmt: skip
    model = XLMRobertaModel(config)  # with its pooler (unused by BGE-M3) so that loading it reports nothing missing
    fill_weights(model, seed=recipe.seed + 1, std=recipe.init_std)
    model.save_pretrained(directory, safe_serialization=True)
    fast_tokenizer: Any = PreTrainedTokenizerFast  # transformers leaves its __init__ untyped
    wrapped = fast_tokenizer(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
        pad_token="<pad>", unk_token="<unk>", mask_token="<mask>", model_max_length=recipe.embedder_max_positions,
    )  # fmt: skip
    wrapped.save_pretrained(directory)


def built_digest(directory: Path) -> str | None:
    """The digest recorded in a finished build's ``recipe.json``, or None when there is none."""
    try:
        return str(json.loads((directory / RECIPE_FILE).read_text(encoding="utf-8"))["digest"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_tiny_models(out: Path, *, recipe: TinyRecipe | None = None) -> TinyModels:
    """Build both models into ``out`` (``out/chat``, ``out/embedder``, ``out/recipe.json``); reuse a finished build.

    The build happens in a temporary sibling directory renamed into place at the end, so an interrupted build
    leaves nothing that looks finished. Raises ``FileExistsError`` when ``out`` holds something else.
    """
    recipe = recipe or TinyRecipe()
    corpus = training_corpus()
    digest = recipe.digest(corpus)
    if built_digest(out) == digest:
        logger.info("tiny models already built in %s (recipe %s)", out, digest)
        return TinyModels(out, digest)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: not empty and not a build of this recipe ({digest}); choose another directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.building-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        build_chat_model(staging / "chat", recipe=recipe, corpus=corpus)
        build_embedder_model(staging / "embedder", recipe=recipe, corpus=corpus)
        record = {"digest": digest, "recipe": asdict(recipe)}
        (staging / RECIPE_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("built tiny models in %s (recipe %s)", out, digest)
    return TinyModels(out, digest)


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/h2h-studio/tiny-models``: where built models are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "h2h-studio" / "tiny-models"


def cached_tiny_models(*, recipe: TinyRecipe | None = None) -> TinyModels:
    """The tiny models of ``recipe`` from the cache (``cache_root()/<digest>``), built there first if needed."""
    recipe = recipe or TinyRecipe()
    digest = recipe.digest(training_corpus())
    target = cache_root() / digest
    if built_digest(target) == digest:
        return TinyModels(target, digest)
    try:
        return build_tiny_models(target, recipe=recipe)
    except OSError:  # FileExistsError, or the rename's ENOTEMPTY: did another process finish the same build first?
        if built_digest(target) == digest:
            return TinyModels(target, digest)
        raise
