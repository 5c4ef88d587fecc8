"""The §9 loss formulas and the fused LM-head logprobs, checked in-process against references."""

import math

import pytest
import torch

from tinker_engine.head import HeadProjection
from tinker_engine.losses import LOSSES, resolve_config


@pytest.fixture
def tensors():
    g = torch.Generator().manual_seed(0)
    lp = (-torch.rand(6, generator=g, dtype=torch.float64) * 3).requires_grad_()
    q = lp.detach() + (torch.rand(6, generator=g, dtype=torch.float64) - 0.5)
    adv = torch.randn(6, generator=g, dtype=torch.float64)
    return lp, {"logprobs": q, "advantages": adv, "weights": torch.rand(6, generator=g, dtype=torch.float64)}


def test_cross_entropy_is_weighted_negative_logprob_sum(tensors):
    lp, inputs = tensors
    loss = LOSSES["cross_entropy"](lp, inputs, {})
    assert math.isclose(loss.item(), -(inputs["weights"] * lp).sum().item())
    assert math.isclose(LOSSES["cross_entropy"](lp, {}, {}).item(), -lp.sum().item())


def test_importance_sampling(tensors):
    lp, inputs = tensors
    ratio = torch.exp(lp.detach() - inputs["logprobs"])
    loss = LOSSES["importance_sampling"](lp, inputs, {})
    assert math.isclose(loss.item(), -(ratio * inputs["advantages"]).sum().item())


def test_ppo_clips_with_absolute_ratio_bounds(tensors):
    lp, inputs = tensors
    config = resolve_config("ppo", {})
    assert config == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    r = torch.exp(lp.detach() - inputs["logprobs"])
    a = inputs["advantages"]
    expected = -torch.minimum(r * a, r.clamp(0.8, 1.2) * a).sum()
    assert math.isclose(LOSSES["ppo"](lp, inputs, config).item(), expected.item())
    # Per-token thresholds override the config scalars.
    per_token = {**inputs, "clip_low_threshold": torch.full((6,), 0.99, dtype=torch.float64),
                 "clip_high_threshold": torch.full((6,), 1.01, dtype=torch.float64)}
    expected = -torch.minimum(r * a, r.clamp(0.99, 1.01) * a).sum()
    assert math.isclose(LOSSES["ppo"](lp, per_token, config).item(), expected.item())


def test_cispo_stops_gradient_through_the_clipped_ratio(tensors):
    lp, inputs = tensors
    config = resolve_config("cispo", {})
    assert config == {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0}
    loss = LOSSES["cispo"](lp, inputs, config)
    loss.backward()
    weight = torch.exp(lp.detach() - inputs["logprobs"]).clamp(0.0, 4.0)
    assert torch.allclose(lp.grad, -weight * inputs["advantages"])


def test_dro_quadratic_penalty(tensors):
    lp, inputs = tensors
    config = resolve_config("dro", {"beta": 0.1})
    expected = -(lp.detach() * inputs["advantages"] - 0.05 * (lp.detach() - inputs["logprobs"]) ** 2).sum()
    assert math.isclose(LOSSES["dro"](lp, inputs, config).item(), expected.item())
    with pytest.raises(KeyError):
        resolve_config("dro", {"gamma": 1.0})


@pytest.mark.parametrize("with_lora", [False, True])
def test_fused_head_matches_autograd_reference(with_lora, monkeypatch):
    import tinker_engine.head as head_module
    from peft import LoraConfig, get_peft_model

    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", 3 * 50)  # force several chunks
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8, bias=False), torch.nn.Linear(8, 50, bias=False)).double()
    for p in model.parameters():
        p.requires_grad_(False)
    head = model[1]
    if with_lora:
        model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["1"], init_lora_weights=False))
        head = model.base_model.model[1]
    hidden = torch.randn(7, 8, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 50, (7, 2))
    grad_out = torch.randn(7, 2, dtype=torch.float64)

    params = [hidden] + [p for p in head.parameters() if p.requires_grad]
    reference_logits = head(hidden)
    reference = reference_logits.gather(1, targets) - torch.logsumexp(reference_logits, dim=-1, keepdim=True)
    ref_grads = torch.autograd.grad(reference, params, grad_out)

    proj = HeadProjection(head)
    assert proj.weight is not None
    fused = proj.target_logprobs(hidden.float().double(), targets)
    fused_grads = torch.autograd.grad(fused, params, grad_out)
    assert torch.allclose(fused.double(), reference, atol=1e-5)
    for a, b in zip(fused_grads, ref_grads):
        assert torch.allclose(a.double(), b, atol=1e-4)
