"""The fused unembedding (head.py) against plain autograd in float64.

Both paths — float32 heads ([h, s·hAᵀ] @ [W, B]ᵀ in one matmul) and half-precision heads (base
GEMM with float32 output beside a float32 LoRA term) — must give the same target logprobs and the
same gradients for the hidden states, A and B as log_softmax over the full logits, across chunk
boundaries, with several targets per row, and must leave the frozen base matrix without a gradient.
The half-precision path runs on CPU through its float32-copy fallback and on CUDA (when present)
through torch.mm(..., out_dtype=float32).
"""

import pytest
import torch
from peft import LoraConfig, inject_adapter_in_model

from devices import DEVICES
from tinker_engine import head as head_module
from tinker_engine.head import HeadProjection

HIDDEN, VOCAB, RANK, SCALING = 24, 301, 4, 2.0


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = torch.nn.Linear(HIDDEN, VOCAB, bias=False)


def _head(dtype, device, lora: bool):
    torch.manual_seed(0)
    model = _Model()
    if lora:
        config = LoraConfig(r=RANK, lora_alpha=RANK * SCALING, target_modules=["lm_head"])
        model = inject_adapter_in_model(config, model)
        with torch.no_grad():
            model.lm_head.lora_B["default"].weight.normal_(0, 0.3)
    model.lm_head.requires_grad_(False)
    for name, p in model.named_parameters():
        p.requires_grad_("lora_" in name)
    model.to(device)
    # Base in `dtype`, adapters in float32 (the engine's dtype policy).
    base = model.lm_head.base_layer if lora else model.lm_head
    base.weight.data = base.weight.data.to(dtype)
    return model.lm_head


def _expected(head, hidden, targets):
    """log_softmax in float64 over the full logits, with autograd."""
    h = hidden.detach().double().requires_grad_(True)
    if hasattr(head, "base_layer"):
        a = head.lora_A["default"].weight.detach().double().requires_grad_(True)
        b = head.lora_B["default"].weight.detach().double().requires_grad_(True)
        w = head.base_layer.weight.detach().double()
        logits = h @ w.T + head.scaling["default"] * (h @ a.T) @ b.T
    else:
        a = b = None
        logits = h @ head.weight.detach().double().T
    out = torch.log_softmax(logits, dim=-1).gather(1, targets)
    return out, h, a, b


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("lora", [True, False])
def test_target_logprobs_and_gradients_match_autograd(device, dtype, lora, monkeypatch):
    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", VOCAB * 5)  # 5 rows per chunk: 4 chunks
    monkeypatch.setattr(head_module, "CUDA_CHUNK_ELEMENTS", VOCAB * 5)
    head = _head(dtype, device, lora)
    gen = torch.Generator().manual_seed(1)
    hidden = torch.randn((17, HIDDEN), generator=gen).to(device=device, dtype=dtype).requires_grad_(True)
    targets = torch.randint(0, VOCAB, (17, 3), generator=gen).to(device)
    weights = torch.randn((17, 3), generator=gen).to(device)

    proj = HeadProjection(head)
    assert (proj.base is not None) == (dtype != torch.float32)
    got = proj.target_logprobs(hidden, targets)
    assert got.dtype == torch.float32
    (got * weights).sum().backward()

    want, h, a, b = _expected(head, hidden, targets)
    (want * weights.double()).sum().backward()
    tol = 1e-4 if dtype == torch.float32 else 1e-3
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol)
    # The hidden-state gradient of a bf16 input is itself rounded to bf16.
    h_tol = tol if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(hidden.grad.double(), h.grad, rtol=h_tol, atol=h_tol)
    if lora:
        torch.testing.assert_close(head.lora_A["default"].weight.grad.double(), a.grad, rtol=tol, atol=tol)
        torch.testing.assert_close(head.lora_B["default"].weight.grad.double(), b.grad, rtol=tol, atol=tol)
        assert head.base_layer.weight.grad is None
    else:
        assert head.weight.grad is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_logits_match_the_module(device, dtype):
    head = _head(dtype, device, lora=True)
    hidden = torch.randn((2, 3, HIDDEN), generator=torch.Generator().manual_seed(2)).to(device=device, dtype=dtype)
    got = HeadProjection(head).logits(hidden)
    assert got.shape == (2, 3, VOCAB) and got.dtype == torch.float32
    want, *_ = _expected(head, hidden.reshape(-1, HIDDEN), torch.arange(VOCAB, device=device).expand(6, -1))
    torch.testing.assert_close(torch.log_softmax(got.double(), -1).reshape(6, VOCAB), want, rtol=0, atol=1e-3)
