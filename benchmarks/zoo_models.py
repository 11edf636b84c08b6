"""The model zoo's catalogue: lazy builders of random-weight models and their inputs (no downloads).

Every builder returns ``(model, args, kwargs)`` for one forward call. torchvision models are every
classification builder of ``torchvision.models.list_models(module=torchvision.models)`` with
``weights=None`` on a 1×3×224×224 image. transformers models are built from configs constructed
directly (never ``from_pretrained``): small but structurally realistic (hidden 256, 4 layers, 4
heads, 1×128 tokens) except the published-size ones the zoo's targets need (BERT-base).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import zoo_families
from zoo_truth import catalogue as truth_catalogue

Built = tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]

TOKENS = 128  # sequence length of every token model
VOCAB = 1000  # small vocabularies keep embeddings from dominating memory; ids are drawn below it
# Heaviest torchvision builders (> 250 M parameters or > 30 GMACs at 224², and the slowest task
# models at the zoo's inputs): skipped by --skip-large.
LARGE = (
    frozenset({"vit_h_14", "vit_l_16", "vit_l_32", "regnet_y_128gf", "regnet_y_32gf", "regnet_x_32gf"})
    | zoo_families.LARGE_TASKS
)


@dataclass(frozen=True)
class ZooSpec:
    """One zoo entry: a unique name, its family and a builder run only when the model is measured."""

    name: str
    family: str  # "torchvision", "transformers" or "paper-built" (zoo_truth)
    build: Callable[[], Built]
    large: bool = False
    group: str = "classification"  # the task or architecture family (issue #19 groups)


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)  # a fixed generator: every run sees the same inputs


def _image(size: int = 224, channels: int = 3) -> torch.Tensor:
    return torch.randn(1, channels, size, size, generator=_generator())


def _tokens(length: int = TOKENS, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randint(0, vocab, (1, length), generator=_generator())


def torchvision_names() -> list[str]:
    """Every classification builder name of torchvision, or an empty list when it is absent."""
    try:
        import torchvision
    except ImportError:
        return []
    return list(torchvision.models.list_models(module=torchvision.models))


def _torchvision(name: str) -> Callable[[], Built]:
    def build() -> Built:
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None)
        return model, (_image(),), {}

    return build


# --- transformers -----------------------------------------------------------------------------

SMALL = {"hidden": 256, "layers": 4, "heads": 4, "ffn": 1024}


def _hf(model_class: str, config_class: str, inputs: Callable[[Any], dict[str, Any]], **config: Any):
    """A builder of ``transformers.<model_class>(<config_class>(**config))`` fed ``inputs(config)``."""

    def build() -> Built:
        transformers = importlib.import_module("transformers")
        torch.manual_seed(0)
        cfg = getattr(transformers, config_class)(**config)
        model = getattr(transformers, model_class)(cfg)
        return model, (), inputs(cfg)

    return build


def _ids(cfg: Any) -> dict[str, Any]:
    return {"input_ids": _tokens()}


def _ids_no_cache(cfg: Any) -> dict[str, Any]:
    # use_cache=False: the output then holds no cache object (decoder-only models).
    return {"input_ids": _tokens(), "use_cache": False}


def _seq2seq(cfg: Any) -> dict[str, Any]:
    return {"input_ids": _tokens(), "decoder_input_ids": _tokens(32), "use_cache": False}


def _pixels(cfg: Any) -> dict[str, Any]:
    return {"pixel_values": _image(cfg.image_size, cfg.num_channels)}


def _clip(cfg: Any) -> dict[str, Any]:
    return {
        "input_ids": _tokens(cfg.text_config.max_position_embeddings),
        "pixel_values": _image(cfg.vision_config.image_size),
    }


def _whisper(cfg: Any) -> dict[str, Any]:
    # The encoder's two convolutions halve the frames: input_features is (1, mels, 2·max_source_positions).
    frames = 2 * cfg.max_source_positions
    features = torch.randn(1, cfg.num_mel_bins, frames, generator=_generator())
    return {"input_features": features, "decoder_input_ids": _tokens(32), "use_cache": False}


_H, _L, _A, _F = SMALL["hidden"], SMALL["layers"], SMALL["heads"], SMALL["ffn"]
_ENCODER = {
    "vocab_size": VOCAB,
    "hidden_size": _H,
    "num_hidden_layers": _L,
    "num_attention_heads": _A,
    "intermediate_size": _F,
}
_DECODER = {**_ENCODER, "max_position_embeddings": 512}
_LLAMA_LIKE = {**_DECODER, "num_key_value_heads": 2}
_BART_LIKE = {
    "vocab_size": VOCAB,
    "d_model": _H,
    "encoder_layers": _L,
    "decoder_layers": _L,
    "encoder_attention_heads": _A,
    "decoder_attention_heads": _A,
    "encoder_ffn_dim": _F,
    "decoder_ffn_dim": _F,
    "max_position_embeddings": 512,
}
_VISION = {
    "image_size": 224,
    "hidden_size": _H,
    "num_hidden_layers": _L,
    "num_attention_heads": _A,
    "intermediate_size": _F,
}

TRANSFORMERS: list[tuple[str, Callable[[], Built]]] = [
    ("bert-base", _hf("BertModel", "BertConfig", _ids)),  # published size (110 M): the strict target
    ("bert", _hf("BertModel", "BertConfig", _ids, **_ENCODER)),
    ("roberta", _hf("RobertaModel", "RobertaConfig", _ids, **_ENCODER, max_position_embeddings=514)),
    (
        "distilbert",
        _hf(
            "DistilBertModel",
            "DistilBertConfig",
            _ids,
            vocab_size=VOCAB,
            dim=_H,
            n_layers=_L,
            n_heads=_A,
            hidden_dim=_F,
        ),
    ),
    ("albert", _hf("AlbertModel", "AlbertConfig", _ids, **_ENCODER, embedding_size=128)),
    ("electra", _hf("ElectraModel", "ElectraConfig", _ids, **_ENCODER, embedding_size=128)),
    ("deberta-v2", _hf("DebertaV2Model", "DebertaV2Config", _ids, **_ENCODER)),
    (
        "gpt2",
        _hf(
            "GPT2Model",
            "GPT2Config",
            _ids_no_cache,
            vocab_size=VOCAB,
            n_embd=_H,
            n_layer=_L,
            n_head=_A,
            bos_token_id=0,
            eos_token_id=0,
        ),
    ),
    (
        "gpt-neo",
        _hf(
            "GPTNeoModel",
            "GPTNeoConfig",
            _ids_no_cache,
            vocab_size=VOCAB,
            hidden_size=_H,
            num_layers=_L,
            num_heads=_A,
            attention_types=[[["global", "local"], _L // 2]],
            window_size=64,
        ),
    ),
    (
        "opt",
        _hf(
            "OPTModel",
            "OPTConfig",
            _ids_no_cache,
            vocab_size=VOCAB,
            hidden_size=_H,
            num_hidden_layers=_L,
            num_attention_heads=_A,
            ffn_dim=_F,
            word_embed_proj_dim=_H,
        ),
    ),
    ("llama", _hf("LlamaModel", "LlamaConfig", _ids_no_cache, **_LLAMA_LIKE)),
    ("mistral", _hf("MistralModel", "MistralConfig", _ids_no_cache, **_LLAMA_LIKE, sliding_window=64)),
    (
        "mixtral",
        _hf(
            "MixtralModel",
            "MixtralConfig",
            _ids_no_cache,
            **_LLAMA_LIKE,
            num_local_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    ("qwen2", _hf("Qwen2Model", "Qwen2Config", _ids_no_cache, **_LLAMA_LIKE)),
    ("phi", _hf("PhiModel", "PhiConfig", _ids_no_cache, **_DECODER)),
    ("gemma", _hf("GemmaModel", "GemmaConfig", _ids_no_cache, **_LLAMA_LIKE, head_dim=_H // _A)),
    (
        "falcon",
        _hf(
            "FalconModel",
            "FalconConfig",
            _ids_no_cache,
            vocab_size=VOCAB,
            hidden_size=_H,
            num_hidden_layers=_L,
            num_attention_heads=_A,
        ),
    ),
    (
        "t5",
        _hf(
            "T5Model",
            "T5Config",
            _seq2seq,
            vocab_size=VOCAB,
            d_model=_H,
            d_kv=_H // _A,
            d_ff=_F,
            num_layers=_L,
            num_heads=_A,
        ),
    ),
    ("bart", _hf("BartModel", "BartConfig", _seq2seq, **_BART_LIKE)),
    ("vit", _hf("ViTModel", "ViTConfig", _pixels, **_VISION, patch_size=16)),
    (
        "swin",
        _hf(
            "SwinModel",
            "SwinConfig",
            _pixels,
            image_size=224,
            embed_dim=48,
            depths=[2, 2, 2, 2],
            num_heads=[2, 4, 8, 16],
        ),
    ),
    (
        "convnext",
        _hf(
            "ConvNextModel",
            "ConvNextConfig",
            _pixels,
            image_size=224,
            hidden_sizes=[48, 96, 192, 384],
            depths=[1, 1, 3, 1],
        ),
    ),
    (
        "clip",
        _hf(
            "CLIPModel",
            "CLIPConfig",
            _clip,
            text_config={**_ENCODER, "max_position_embeddings": 77, "bos_token_id": 0, "eos_token_id": 2},
            vision_config={**_VISION, "patch_size": 32},
            projection_dim=128,
        ),
    ),
    (
        "whisper",
        _hf(
            "WhisperModel",
            "WhisperConfig",
            _whisper,
            **{
                key: value
                for key, value in _BART_LIKE.items()
                if key not in ("max_position_embeddings", "vocab_size")
            },
            num_mel_bins=80,
            max_source_positions=64,
            max_target_positions=64,
            vocab_size=51865,  # Whisper's own: its special-token ids (50256, 50257) must be in range
        ),
    ),
]


def catalogue() -> list[ZooSpec]:
    """Every zoo entry in run order.

    torchvision's classifiers (when installed), transformers' text/vision models, then the families
    of issue #19 (``zoo_families``): torchvision's detection, segmentation, video and optical-flow
    builders, the other transformers families, and one ``generate()`` per decoder family; then the
    architectures of issues #32 and #39, built from their papers' blocks (``zoo_truth``).
    """
    specs = [ZooSpec(name, "torchvision", _torchvision(name), name in LARGE) for name in torchvision_names()]
    specs += [ZooSpec(name, "transformers", build) for name, build in TRANSFORMERS]
    specs += [
        ZooSpec(
            name,
            "torchvision",
            zoo_families.torchvision_task(name, task),
            name in zoo_families.LARGE_TASKS,
            task,
        )
        for name, task in zoo_families.task_names()
    ]
    specs += [
        ZooSpec(name, "transformers", build, group=group) for name, group, build in zoo_families.FAMILIES
    ]
    specs += [ZooSpec(name, "transformers", build, group="generate") for name, build in zoo_families.GENERATE]
    specs += [
        ZooSpec(spec.name, "paper-built", spec.build, group=spec.group) for spec in truth_catalogue.TRUTH
    ]
    return specs


def small_specs(only: str | None, limit: int | None) -> list[ZooSpec]:
    """The non-large zoo entries, narrowed to the comma-separated ``only`` names, at most ``limit``."""
    wanted = set(only.split(",")) if only else None
    specs = [s for s in catalogue() if not s.large and (wanted is None or s.name in wanted)]
    return specs[:limit] if limit is not None else specs
