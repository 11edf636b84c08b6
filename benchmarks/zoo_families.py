"""The zoo's architecture families beyond classifiers and text transformers (issue #19, families.md 4).

Lazy builders, as in ``zoo_models``: every torchvision detection, segmentation, video and optical-flow
builder (``weights=None, weights_backbone=None``) on small inputs, transformers families the text
zoo lacks (audio, state-space and hybrid, mixture-of-experts, Fourier, block-sparse attention, dense
vision prediction, time series, encoder-decoders whose positional modules are called with a
``torch.Size``), and one ``generate()`` per decoder family. Configs are tiny (hidden 64, 2 layers)
so the whole set runs on a 2-core machine; they keep each architecture's structure, not its size.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Built = tuple[nn.Module, tuple[Any, ...], dict[str, Any]]
VOCAB = 1000
_H, _L, _A, _F = 64, 2, 4, 128  # hidden, layers, heads, FFN of the tiny transformers configs


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_generator())


def _tokens(length: int = 32) -> torch.Tensor:
    return torch.randint(1, VOCAB, (1, length), generator=_generator())


# --- torchvision tasks ------------------------------------------------------------------------

VIDEO_INPUT = {  # the smallest clip each video builder accepts (MViT's positional tables are fixed)
    "mvit_v1_b": (1, 3, 16, 224, 224),
    "mvit_v2_s": (1, 3, 16, 224, 224),
    "s3d": (1, 3, 16, 224, 224),  # its final pooling needs 2×7×7 features
}
# The slowest task models at these inputs: skipped by --skip-large.
LARGE_TASKS = frozenset(
    {"mvit_v1_b", "mvit_v2_s", "swin3d_b", "deeplabv3_resnet101", "fcn_resnet101", "ssd300_vgg16", "s3d"}
)


def task_names() -> list[tuple[str, str]]:
    """``(builder, task)`` for torchvision's detection, segmentation, video and optical-flow builders."""
    try:
        import torchvision
    except ImportError:
        return []
    models = torchvision.models
    tasks = {
        "detection": models.detection,
        "segmentation": models.segmentation,
        "video": models.video,
        "optical_flow": models.optical_flow,
    }
    return [(name, task) for task, module in tasks.items() for name in models.list_models(module=module)]


def torchvision_task(name: str, task: str) -> Callable[[], Built]:
    """A builder of one torchvision task model and its small input (see the module docstring)."""

    def build() -> Built:
        import torchvision

        torch.manual_seed(0)
        options: dict[str, Any] = {"weights": None}
        if task in ("detection", "segmentation"):
            options["weights_backbone"] = None  # only these builders take a backbone's weights
        if task == "detection" and not name.startswith("ssd"):
            options.update(min_size=128, max_size=128)  # the transform resizes to this, not 800
        model = torchvision.models.get_model(name, **options)
        if task == "detection":
            # SSD resizes to its fixed 300²/320²; the R-CNNs, RetinaNet and FCOS to 128².
            return model, ([_randn(3, 128, 128)],), {}
        if task == "segmentation":
            return model, (_randn(1, 3, 128, 128),), {}
        if task == "video":
            return model, (_randn(*VIDEO_INPUT.get(name, (1, 3, 4, 64, 64))),), {}
        # optical flow: two frames, three refinement iterations instead of twelve
        return model, (_randn(1, 3, 128, 128), _randn(1, 3, 128, 128)), {"num_flow_updates": 3}

    return build


# --- transformers families --------------------------------------------------------------------


def _hf(model_class: str, config_class: str, inputs: Callable[[Any], dict[str, Any]], **config: Any):
    def build() -> Built:
        transformers = importlib.import_module("transformers")
        torch.manual_seed(0)
        cfg = getattr(transformers, config_class)(**config)
        return getattr(transformers, model_class)(cfg), (), inputs(cfg)

    return build


def _ids(cfg: Any) -> dict[str, Any]:
    return {"input_ids": _tokens(), "use_cache": False}


def _ids_only(cfg: Any) -> dict[str, Any]:
    return {"input_ids": _tokens(128)}


def _seq2seq(cfg: Any) -> dict[str, Any]:
    return {"input_ids": _tokens(), "decoder_input_ids": _tokens(8), "use_cache": False}


def _audio(cfg: Any) -> dict[str, Any]:
    return {"input_values": _randn(1, 4000)}  # 0.25 s at 16 kHz


def _pixels(cfg: Any) -> dict[str, Any]:
    return {"pixel_values": _randn(1, 3, 64, 64)}


def _patchtst(cfg: Any) -> dict[str, Any]:
    return {"past_values": _randn(1, cfg.context_length, cfg.num_input_channels)}


def _time_series(cfg: Any) -> dict[str, Any]:
    past = cfg.context_length + max(cfg.lags_sequence)
    return {
        "past_values": _randn(1, past),
        "past_time_features": _randn(1, past, cfg.num_time_features),
        "past_observed_mask": torch.ones(1, past),
        "future_values": _randn(1, cfg.prediction_length),
        "future_time_features": _randn(1, cfg.prediction_length, cfg.num_time_features),
        "use_cache": False,
    }


_DECODER = {
    "vocab_size": VOCAB,
    "hidden_size": _H,
    "num_hidden_layers": _L,
    "num_attention_heads": _A,
    "num_key_value_heads": 2,
    "intermediate_size": _F,
    "max_position_embeddings": 256,
}
_AUDIO = {
    "hidden_size": _H,
    "num_hidden_layers": _L,
    "num_attention_heads": _A,
    "intermediate_size": _F,
    "conv_dim": (32, 32, 32),
    "conv_stride": (5, 2, 2),
    "conv_kernel": (10, 3, 3),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
}
_BART_LIKE = {
    "vocab_size": VOCAB,
    "d_model": _H,
    "encoder_layers": _L,
    "decoder_layers": _L,
    "encoder_attention_heads": _A,
    "decoder_attention_heads": _A,
    "encoder_ffn_dim": _F,
    "decoder_ffn_dim": _F,
    "max_position_embeddings": 256,
    "pad_token_id": 0,
    "decoder_start_token_id": 0,
}
_MAMBA = {"vocab_size": VOCAB, "hidden_size": _H, "state_size": 8, "num_hidden_layers": _L, "expand": 2}
_MAMBA2 = {
    "vocab_size": VOCAB,
    "hidden_size": _H,
    "num_heads": 4,
    "head_dim": 32,  # num_heads · head_dim = expand · hidden
    "n_groups": 1,
    "state_size": 16,
    "num_hidden_layers": _L,
    "chunk_size": 16,
}
_JAMBA = {
    **_DECODER,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "attn_layer_period": 2,
    "attn_layer_offset": 1,
    "mamba_d_state": 8,
}
_T5_LIKE = {"vocab_size": VOCAB, "d_model": _H, "d_kv": 16, "d_ff": _F, "num_layers": _L, "num_heads": _A}

FAMILIES: list[tuple[str, str, Callable[[], Built]]] = [
    # (zoo name, family label, builder)
    ("wav2vec2", "audio", _hf("Wav2Vec2Model", "Wav2Vec2Config", _audio, **_AUDIO)),
    ("hubert", "audio", _hf("HubertModel", "HubertConfig", _audio, **_AUDIO)),
    ("mamba", "state-space", _hf("MambaModel", "MambaConfig", _ids, **_MAMBA)),
    ("mamba2", "state-space", _hf("Mamba2Model", "Mamba2Config", _ids, **_MAMBA2)),
    ("jamba", "hybrid", _hf("JambaModel", "JambaConfig", _ids, **_JAMBA)),
    (
        "qwen2-moe",
        "mixture-of-experts",
        _hf(
            "Qwen2MoeModel",
            "Qwen2MoeConfig",
            _ids,
            **_DECODER,
            moe_intermediate_size=64,
            shared_expert_intermediate_size=_F,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    (
        "switch",
        "mixture-of-experts",
        _hf(
            "SwitchTransformersModel",
            "SwitchTransformersConfig",
            _seq2seq,
            **_T5_LIKE,
            num_decoder_layers=_L,
            num_experts=4,
            encoder_sparse_step=1,
            decoder_sparse_step=1,
        ),
    ),
    (
        "fnet",
        "fourier",
        _hf(
            "FNetModel",
            "FNetConfig",
            _ids_only,
            vocab_size=VOCAB,
            hidden_size=_H,
            num_hidden_layers=_L,
            intermediate_size=_F,
            max_position_embeddings=256,
        ),
    ),
    (
        "bigbird-block-sparse",
        "sparse attention",
        _hf(
            "BigBirdModel",
            "BigBirdConfig",
            _ids_only,  # 128 tokens > (5 + 2·random blocks)·block size: block-sparse really runs
            vocab_size=VOCAB,
            hidden_size=_H,
            num_hidden_layers=_L,
            num_attention_heads=_A,
            intermediate_size=_F,
            attention_type="block_sparse",
            block_size=8,
            num_random_blocks=2,
            max_position_embeddings=256,
        ),
    ),
    (
        "dpt",
        "dense vision",
        _hf(
            "DPTForDepthEstimation",
            "DPTConfig",
            _pixels,
            hidden_size=_H,
            num_hidden_layers=4,
            num_attention_heads=_A,
            intermediate_size=_F,
            image_size=64,
            patch_size=16,
            backbone_out_indices=[0, 1, 2, 3],
            neck_hidden_sizes=[16, 32, 64, 64],
            fusion_hidden_size=32,
            head_hidden_size=16,
        ),
    ),
    (
        "segformer",
        "dense vision",
        _hf(
            "SegformerForSemanticSegmentation",
            "SegformerConfig",
            _pixels,
            depths=[1, 1, 1, 1],
            hidden_sizes=[16, 32, 48, 64],
            num_attention_heads=[1, 2, 2, 4],
            decoder_hidden_size=64,
            num_labels=4,
        ),
    ),
    (
        "patchtst",
        "time series",
        _hf(
            "PatchTSTModel",
            "PatchTSTConfig",
            _patchtst,
            num_input_channels=3,
            context_length=64,
            patch_length=8,
            patch_stride=8,
            d_model=32,
            num_hidden_layers=_L,
            num_attention_heads=2,
            ffn_dim=64,
        ),
    ),
    (
        "time-series-transformer",
        "time series",
        _hf(
            "TimeSeriesTransformerModel",
            "TimeSeriesTransformerConfig",
            _time_series,
            prediction_length=8,
            context_length=16,
            lags_sequence=[1, 2, 3],
            num_time_features=1,
            d_model=32,
            encoder_layers=_L,
            decoder_layers=_L,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
        ),
    ),
    (
        "marian",
        "encoder-decoder, size-called positions",
        _hf("MarianModel", "MarianConfig", _seq2seq, **_BART_LIKE),
    ),
    (
        "pegasus",
        "encoder-decoder, size-called positions",
        _hf("PegasusModel", "PegasusConfig", _seq2seq, **_BART_LIKE),
    ),
]


class Generate(nn.Module):
    """A root module whose forward is ``model.generate(**kwargs)``: the whole decode loop, observed.

    Greedy, a fixed number of new tokens, no sampling: every run dispatches the same operators.
    """

    def __init__(self, model: nn.Module, new_tokens: int = 4) -> None:
        super().__init__()
        self.model = model
        self.new_tokens = new_tokens

    def forward(self, **inputs: Any) -> torch.Tensor:
        return self.model.generate(  # type: ignore[operator]
            **inputs, max_new_tokens=self.new_tokens, min_new_tokens=self.new_tokens, do_sample=False
        )


def _generate(model_class: str, config_class: str, **config: Any) -> Callable[[], Built]:
    def build() -> Built:
        model, _, _ = _hf(model_class, config_class, _ids, **config, pad_token_id=0, eos_token_id=0)()
        return (
            Generate(model),
            (),
            {"input_ids": _tokens(16), "attention_mask": torch.ones(1, 16, dtype=torch.long)},
        )

    return build


_GPT2 = {"vocab_size": VOCAB, "n_embd": _H, "n_layer": _L, "n_head": _A, "bos_token_id": 0}
GENERATE: list[tuple[str, Callable[[], Built]]] = [
    ("generate-gpt2", _generate("GPT2LMHeadModel", "GPT2Config", **_GPT2)),
    ("generate-llama", _generate("LlamaForCausalLM", "LlamaConfig", **_DECODER)),
    (
        "generate-mixtral",
        _generate(
            "MixtralForCausalLM", "MixtralConfig", **_DECODER, num_local_experts=4, num_experts_per_tok=2
        ),
    ),
    ("generate-mamba", _generate("MambaForCausalLM", "MambaConfig", **_MAMBA)),
    (
        "generate-t5",
        _generate("T5ForConditionalGeneration", "T5Config", **_T5_LIKE, decoder_start_token_id=0),
    ),
    (
        "generate-marian",
        _generate(
            "MarianMTModel",
            "MarianConfig",
            **{k: v for k, v in _BART_LIKE.items() if k != "pad_token_id"},
        ),
    ),
]
