"""The training suite's model: a small GPT (token embedding, pre-norm transformer layers, a final layer
norm and an output head tied to the embedding), in two builds of the same shape.

- `te`: the layers are `te.TransformerLayer` (fused QKV, causal self-attention, GELU MLP), run under TE's
  autocast with the case's recipe.
- `torch`: the same layers in plain PyTorch (LayerNorm, one QKV Linear, scaled dot-product attention,
  an output projection, a GELU MLP), on CPU or any GPU; under the `torch-ref` recipe the four Linears of a
  layer run NVFP4 through the project's emulation.

Tensors run [sequence, batch, hidden] through the layers, TE's default layout. Dropout is off: a
trajectory depends on the seed and the data alone.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from benchmarks.harness.profiles import TrainingShape

INIT_STD = 0.02
DTYPES = {"fp32": torch.float32}  # every other recipe keeps its parameters in bf16
# the torch backend's NVFP4: the project's own emulation (benchmarks/nvfp4_emulation), as in the linear suite
EMULATED_RECIPE = "torch-ref"


def params_dtype(recipe: str) -> torch.dtype:
    return DTYPES.get(recipe, torch.bfloat16)


class EmulatedLinear(nn.Module):
    """nn.Linear's shape whose three GEMMs run through the project's NVFP4 emulation (the torch-ref recipe:
    benchmarks/harness/emulated_linear.py), the bias added after."""

    def __init__(self, in_features: int, out_features: int, dtype: torch.dtype, device: str) -> None:
        super().__init__()
        from benchmarks.harness.emulated_linear import EmulatedNVFP4Linear

        self.linear = EmulatedNVFP4Linear(in_features, out_features, device=device, dtype=dtype)
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + self.bias


class TorchLayer(nn.Module):
    """One pre-norm transformer layer of te.TransformerLayer's shape in plain PyTorch; with `emulated`, its
    four Linears run NVFP4 through the project's emulation."""

    def __init__(self, shape: TrainingShape, dtype: torch.dtype, device: str, emulated: bool = False) -> None:
        super().__init__()
        kw: dict[str, Any] = {"dtype": dtype, "device": device}
        linear = EmulatedLinear if emulated else nn.Linear
        self.heads = shape.heads
        self.attention_norm = nn.LayerNorm(shape.hidden, **kw)
        self.qkv = linear(shape.hidden, 3 * shape.hidden, **kw)
        self.projection = linear(shape.hidden, shape.hidden, **kw)
        self.mlp_norm = nn.LayerNorm(shape.hidden, **kw)
        self.fc1 = linear(shape.hidden, shape.ffn_hidden, **kw)
        self.fc2 = linear(shape.ffn_hidden, shape.hidden, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq, batch, hidden = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).chunk(3, dim=-1)
        # [seq, batch, hidden] -> [batch, heads, seq, head_dim]
        q, k, v = (t.reshape(seq, batch, self.heads, -1).permute(1, 2, 0, 3) for t in (q, k, v))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.projection(attended.permute(2, 0, 1, 3).reshape(seq, batch, hidden))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.mlp_norm(x))))


class TorchLayers(nn.Module):
    def __init__(self, shape: TrainingShape, dtype: torch.dtype, device: str, emulated: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(TorchLayer(shape, dtype, device, emulated) for _ in range(shape.layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def first_layernorm_weight(self) -> nn.Parameter:
        first = self.layers[0]
        assert isinstance(first, TorchLayer)
        return first.attention_norm.weight


class TeLayers(nn.Module):
    """te.TransformerLayer x layers; `is_first_microbatch` reaches every layer (TE's FP8 weight caching)."""

    def __init__(self, shape: TrainingShape, dtype: torch.dtype, device: str) -> None:
        super().__init__()
        from benchmarks.harness.te_import import import_transformer_engine, keep_attention_deterministic

        te = import_transformer_engine()
        keep_attention_deterministic()  # a resume, a compile or a graph is compared with eager exactly
        self.layers = nn.ModuleList(
            te.TransformerLayer(
                shape.hidden,
                shape.ffn_hidden,
                shape.heads,
                hidden_dropout=0.0,
                attention_dropout=0.0,
                self_attn_mask_type="causal",
                fuse_qkv_params=True,
                init_method=_normal_init,
                output_layer_init_method=_normal_init,
                layer_number=number + 1,
                params_dtype=dtype,
                device=device,
            )
            for number in range(shape.layers)
        )

    def forward(self, x: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, is_first_microbatch=is_first_microbatch)
        return x

    def first_layernorm_weight(self) -> Any:
        return self.layers[0].self_attention.layernorm_qkv.layer_norm_weight  # type: ignore[union-attr]


def _normal_init(weight: torch.Tensor) -> None:
    nn.init.normal_(weight, std=INIT_STD)


class Gpt(nn.Module):
    """Embedding -> layers -> final norm -> logits through the embedding's own weight (tied head)."""

    def __init__(
        self, layers: TorchLayers | TeLayers, shape: TrainingShape, dtype: torch.dtype, device: str
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(shape.vocab, shape.hidden, dtype=dtype, device=device)
        nn.init.normal_(self.embedding.weight, std=INIT_STD)
        self.layers = layers
        self.final_norm = nn.LayerNorm(shape.hidden, dtype=dtype, device=device)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """[batch, seq] token ids -> [seq, batch, hidden]."""
        return self.embedding(tokens.t())

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(self.final_norm(hidden), self.embedding.weight)

    def first_layernorm_weight(self) -> Any:
        return self.layers.first_layernorm_weight()


def build(backend: str, recipe: str, shape: TrainingShape, device: str, seed: int) -> Gpt:
    """A fresh model whose initial values follow from `seed` alone."""
    torch.manual_seed(seed)
    dtype = params_dtype(recipe)
    if backend == "te":
        return Gpt(TeLayers(shape, dtype, device), shape, dtype, device)
    layers = TorchLayers(shape, dtype, device, emulated=recipe == EMULATED_RECIPE)
    return Gpt(layers, shape, dtype, device)
