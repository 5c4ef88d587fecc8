"""The §9 loss formulas and the fused LM-head logprobs, checked in-process against references."""

import math

import pytest
import torch

import numpy as np

from tinker_engine.base_models import BaseModelSpec
from tinker_engine.errors import EngineError
from tinker_engine.head import HeadProjection
from tinker_engine.losses import LOSSES, resolve_config
from tinker_engine.validation import validate_forward
from tinker_engine.wire import Datum, ForwardRequest


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


def gspo_reference(lp, q, adv, mask, lo, hi):
    """GSPO-token written out per token in float32 numpy: the value and d loss / d logprob.

    Every token's ratio has the sequence ratio s as its value and d ratio_t / d lp_t = s; the
    min(r·A, clip(r)·A) term then passes that gradient unless the clipped side is the minimum."""
    lp, q, adv, mask = (np.asarray(x, dtype=np.float32) for x in (lp, q, adv, mask))
    lo, hi = np.broadcast_to(np.float32(lo), lp.shape), np.broadcast_to(np.float32(hi), lp.shape)
    marked = [t for t in range(len(lp)) if mask[t] != 0]
    s = np.float32(np.exp(np.float32(sum(lp[t] - q[t] for t in marked) / np.float32(len(marked)))))
    loss, grad = np.float32(0), np.zeros_like(lp)
    for t in range(len(lp)):
        clipped = min(max(s, lo[t]), hi[t])
        loss -= min(s * adv[t], clipped * adv[t])
        clip_binds = (adv[t] > 0 and s > hi[t]) or (adv[t] < 0 and s < lo[t])
        grad[t] = 0.0 if clip_binds else -adv[t] * s
    return float(loss), grad, float(s)


def run_gspo(lp, q, adv, mask, config=None, **per_token):
    lp_t = torch.tensor(lp, dtype=torch.float32, requires_grad=True)
    inputs = {"logprobs": torch.tensor(q, dtype=torch.float32), "advantages": torch.tensor(adv, dtype=torch.float32),
              "sequence_ratio_mask": torch.tensor(mask, dtype=torch.float32),
              **{k: torch.tensor(v, dtype=torch.float32) for k, v in per_token.items()}}
    loss = LOSSES["gspo"](lp_t, inputs, resolve_config("gspo", config or {}))
    assert loss.dtype == torch.float32
    loss.backward()
    return loss.item(), lp_t.grad.numpy()


# Prompt positions (mask 0, logprobs and advantages padded with 0, as the cookbook builds them)
# followed by sampled tokens.
GSPO_LP = [-2.5, -0.7, -1.1, -0.3, -2.0, -0.9]
GSPO_Q = [0.0, 0.0, -1.0, -0.5, -1.7, -1.0]
GSPO_MASK = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("advantage", [0.7, -1.3])
def test_gspo_matches_a_per_token_float32_reference(advantage):
    adv = [0.0, 0.0] + [advantage] * 4
    loss, grad = run_gspo(GSPO_LP, GSPO_Q, adv, GSPO_MASK)
    ref_loss, ref_grad, s = gspo_reference(GSPO_LP, GSPO_Q, adv, GSPO_MASK, 0.8, 1.2)
    assert 0.8 < s < 1.2  # inside the clip range: every sampled token gets -A·s
    assert math.isclose(loss, ref_loss, rel_tol=1e-6)
    assert np.allclose(grad, ref_grad, rtol=1e-6, atol=1e-7)
    assert np.allclose(grad[2:], -advantage * s, rtol=1e-6)
    assert np.all(grad[:2] == 0.0)


def test_gspo_ratio_is_over_the_masked_tokens_only():
    adv = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    # A wildly different logprob on an unmasked position changes neither the value nor the gradient.
    far = [0.0, 50.0] + GSPO_Q[2:]
    assert np.allclose(run_gspo(GSPO_LP, far, adv, GSPO_MASK)[1], run_gspo(GSPO_LP, GSPO_Q, adv, GSPO_MASK)[1])
    # The sequence ratio is the geometric mean of the token ratios, not their product or mean.
    _, _, s = gspo_reference(GSPO_LP, GSPO_Q, adv, GSPO_MASK, 0.8, 1.2)
    token_ratios = np.exp(np.array(GSPO_LP[2:]) - np.array(GSPO_Q[2:]))
    assert math.isclose(s, float(np.prod(token_ratios) ** 0.25), rel_tol=1e-6)
    # Per-token advantages keep per-token gradients scaled by the one sequence ratio.
    varied = [0.0, 0.0, 0.5, -0.25, 2.0, 1.0]
    loss, grad = run_gspo(GSPO_LP, GSPO_Q, varied, GSPO_MASK)
    ref_loss, ref_grad, s = gspo_reference(GSPO_LP, GSPO_Q, varied, GSPO_MASK, 0.8, 1.2)
    assert math.isclose(loss, ref_loss, rel_tol=1e-6) and np.allclose(grad, ref_grad, rtol=1e-6)
    assert np.allclose(grad[2:], -np.array(varied[2:], dtype=np.float32) * s, rtol=1e-6)


@pytest.mark.parametrize(
    "shift, advantage, binds",
    [
        (+0.5, +1.0, True),   # s ≈ 1.65 > 1.2 with A > 0: clipped, no gradient
        (+0.5, -1.0, False),  # s > 1.2 with A < 0: the unclipped side is the minimum
        (-0.5, -1.0, True),   # s ≈ 0.61 < 0.8 with A < 0: clipped
        (-0.5, +1.0, False),  # s < 0.8 with A > 0: unclipped
    ],
)
def test_gspo_clips_the_sequence_ratio_as_a_whole(shift, advantage, binds):
    q = [lp - shift for lp in GSPO_LP]  # every token's log-ratio is `shift`, so s = e^shift
    adv = [advantage] * 6
    mask = [1.0] * 6
    loss, grad = run_gspo(GSPO_LP, q, adv, mask)
    ref_loss, ref_grad, s = gspo_reference(GSPO_LP, q, adv, mask, 0.8, 1.2)
    assert math.isclose(s, math.exp(shift), rel_tol=1e-5)
    assert math.isclose(loss, ref_loss, rel_tol=1e-6)
    assert np.allclose(grad, ref_grad, rtol=1e-6)
    assert np.all(grad == 0.0) == binds
    if binds:  # the loss holds the threshold's value
        bound = 1.2 if shift > 0 else 0.8
        assert math.isclose(loss, -6 * bound * advantage, rel_tol=1e-6)


def test_gspo_thresholds_from_config_and_per_token_inputs():
    q = [lp - 0.1 for lp in GSPO_LP]  # s = e^0.1 ≈ 1.105
    adv, mask = [1.0] * 6, [1.0] * 6
    assert resolve_config("gspo", {}) == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert np.all(run_gspo(GSPO_LP, q, adv, mask)[1] != 0.0)
    assert np.all(run_gspo(GSPO_LP, q, adv, mask, {"clip_high_threshold": 1.05})[1] == 0.0)
    # Per-token thresholds override the config: clip only the last three tokens.
    high = [1.2, 1.2, 1.2, 1.05, 1.05, 1.05]
    loss, grad = run_gspo(GSPO_LP, q, adv, mask, clip_high_threshold=high, clip_low_threshold=[0.8] * 6)
    ref_loss, ref_grad, _ = gspo_reference(GSPO_LP, q, adv, mask, [0.8] * 6, high)
    assert math.isclose(loss, ref_loss, rel_tol=1e-6) and np.allclose(grad, ref_grad, rtol=1e-6)
    assert np.all(grad[:3] != 0.0) and np.all(grad[3:] == 0.0)
    with pytest.raises(KeyError):
        resolve_config("gspo", {"epsilon": 0.2})


def _spec():
    return BaseModelSpec(name="m", config=None, arch="x", vocab_size=32, max_context=64, eos_token_ids=[0],
                         tokenizer_file=None, tokenizer_id="t")


def _gspo_request(mask):
    n = len(mask)
    inputs = {"target_tokens": np.arange(n, dtype=np.int64), "logprobs": np.zeros(n, np.float32),
              "advantages": np.ones(n, np.float32), "sequence_ratio_mask": np.asarray(mask, np.float32)}
    return ForwardRequest(data=[Datum(tokens=np.arange(n, dtype=np.int64), inputs=inputs)], loss_fn="gspo",
                          loss_fn_config={}, forward_only=False)


def test_gspo_requests_are_served_and_checked():
    req = _gspo_request([0.0, 1.0, 1.0])
    validate_forward(req, _spec())
    assert req.loss_fn_config == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    with pytest.raises(EngineError, match=r"data\[0\].loss_fn_inputs.sequence_ratio_mask marks no token"):
        validate_forward(_gspo_request([0.0, 0.0, 0.0]), _spec())
    # Nothing marked and nothing to reinforce (e.g. every action masked): served, contributes nothing.
    inert = _gspo_request([0.0, 0.0, 0.0])
    inert.data[0].inputs["advantages"][:] = 0.0
    validate_forward(inert, _spec())
    loss, grad = run_gspo([-1.0, -2.0, -3.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    assert loss == 0.0 and np.all(grad == 0.0)
    missing = _gspo_request([1.0, 1.0, 1.0])
    del missing.data[0].inputs["sequence_ratio_mask"]
    with pytest.raises(EngineError, match="missing 'sequence_ratio_mask' required by loss_fn 'gspo'"):
        validate_forward(missing, _spec())
    refused = _gspo_request([1.0, 1.0, 1.0])
    refused.loss_fn = "stable_reinforce"
    with pytest.raises(EngineError, match="not served by this engine"):
        validate_forward(refused, _spec())


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
