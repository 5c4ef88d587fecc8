"""Training attention (attention.py): the exact backward equals autograd through attention, the
training instances use it where the fused kernels' backward is not deterministic, and a training
step is bitwise reproducible on every device (on CUDA, the case the exact backward exists for)."""

import numpy as np
import pytest
import torch

from devices import DEVICES
from http_client import corpus
from tinker_engine import attention
from tinker_engine.base_models import BaseModelCache, ModelRegistry
from tinker_engine.lora import LoraSpec
from tinker_engine.trainer import TrainingModel
from tinker_engine.wire import Datum, ForwardRequest


def inputs(heads=4, kv_heads=2, length=13, dim=8, batch=2, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length, dim, generator=g, dtype=dtype)
    k = torch.randn(batch, kv_heads, length, dim, generator=g, dtype=dtype)
    v = torch.randn(batch, kv_heads, length, dim, generator=g, dtype=dtype)
    return q, k, v


def masks(length, batch):
    g = torch.Generator().manual_seed(1)
    allowed = torch.rand(batch, 1, length, length, generator=g) > 0.4
    allowed[..., 0] = True
    allowed[0, 0, 3] = False  # a row that attends nowhere: a zero gradient, not NaN
    return {"none": None, "bool": allowed, "float": torch.randn(1, 1, length, length, generator=g, dtype=torch.float64)}


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
@pytest.mark.parametrize("case", ["causal", "none", "bool", "float"])
@pytest.mark.parametrize("chunk", [None, 50])  # one chunk; chunks of a few query rows
def test_the_exact_backward_equals_autograd_through_attention(kv_heads, case, chunk):
    q, k, v = (t.requires_grad_() for t in inputs(kv_heads=kv_heads))
    causal, mask = case == "causal", masks(13, 2)[case if case != "causal" else "none"]
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=0.3,
                                                           enable_gqa=True)
    grad_out = torch.randn_like(out)
    if mask is not None and mask.dtype == torch.bool:  # sdpa's NaN for the empty row, zero here
        grad_out[0, :, 3] = 0
    expected = torch.autograd.grad(out, (q, k, v), grad_out)
    got = attention.attention_backward(q.detach(), k.detach(), v.detach(), out.detach(), grad_out, 0.3, causal, mask,
                                       chunk_elements=chunk)
    for name, g, e in zip("qkv", got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, name
        assert torch.allclose(g, e.nan_to_num(0.0), atol=1e-12, rtol=1e-10), name


def test_half_precision_inputs_give_float32_accurate_gradients_in_their_dtype():
    q, k, v = inputs(length=40, dim=16)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    grad_out = torch.randn_like(out)
    expected = attention.attention_backward(q, k, v, out, grad_out, 0.25, True)
    half = [t.to(torch.bfloat16) for t in (q, k, v, out, grad_out)]
    got = attention.attention_backward(*half, 0.25, True)
    for g, e in zip(got, expected):
        assert g.dtype == torch.bfloat16
        assert (g.double() - e).norm() / e.norm() < 2e-2


def training_model(device, dtype=torch.float32):
    spec = ModelRegistry().resolve("tiny-qwen3")
    base = BaseModelCache(torch.device(device), dtype).model(spec)
    return base, TrainingModel(base, spec, LoraSpec(rank=4, seed=3), torch.device(device), max_batch_tokens=8192)


def sl_request(n, length):
    data = [Datum(np.array(t[:-1], dtype=np.int64), {"target_tokens": np.array(t[1:], dtype=np.int64),
                                                      "weights": np.ones(len(t) - 1, dtype=np.float32)})
            for t in corpus(n, length + 1)]
    return ForwardRequest(data, "cross_entropy", {}, False)


def step_gradients(model, req):
    for p in model.params.values():
        p.grad = None
    out = model.forward_backward(req)
    return [p.grad.clone() for p in model.params.values()], out


def test_training_instances_use_it_and_their_forward_stays_sdpa_bitwise(monkeypatch):
    base, model = training_model("cpu")
    assert model.peft.get_base_model().config._attn_implementation == attention.ATTENTION
    assert base.config._attn_implementation == "sdpa"  # what samplers built on the base use
    req = sl_request(3, 30)
    fused_grads, fused_out = step_gradients(model, req)

    calls = []
    exact = attention.attention_backward
    monkeypatch.setattr(attention, "replaces_fused_backward", lambda q: True)
    monkeypatch.setattr(attention, "attention_backward", lambda *a, **k: calls.append(1) or exact(*a, **k))
    grads, out = step_gradients(model, req)
    assert len(calls) == model.spec.config.num_hidden_layers
    for a, b in zip(out["loss_fn_outputs"], fused_out["loss_fn_outputs"]):
        assert np.array_equal(a["logprobs"], b["logprobs"])  # the forward is sdpa's own call
    for g, f in zip(grads, fused_grads):
        assert torch.allclose(g, f, rtol=1e-4, atol=1e-6 * f.abs().max().item())


def test_what_it_does_not_cover_keeps_the_fused_backward(monkeypatch, caplog):
    monkeypatch.setattr(attention, "replaces_fused_backward", lambda q: True)
    q, k, v = (t.float().requires_grad_() for t in inputs())
    module = torch.nn.Module()
    module.num_key_value_groups = 2
    with caplog.at_level("WARNING"):
        out, _ = attention.deterministic_sdpa(module, q, k, v, None, dropout=0.5)
        attention.deterministic_sdpa(module, q, k, v, None, dropout=0.5)
    assert out.grad_fn is not None and "_ExactBackward" not in type(out.grad_fn).__name__
    assert [r.getMessage() for r in caplog.records].count(
        "training attention with attention dropout keeps PyTorch's fused backward, non-deterministic on cpu") <= 1
    out, _ = attention.deterministic_sdpa(module, q, k, v, None)
    assert "_ExactBackward" in type(out.grad_fn).__name__


@pytest.fixture
def deterministic_mode():
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)  # as cli.configure_determinism runs the engine
    yield
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@pytest.mark.parametrize("device", DEVICES)
def test_a_training_step_is_bitwise_reproducible(device, deterministic_mode, monkeypatch):
    # On CUDA, sequences long enough for the fused backward's atomics to span several key blocks.
    length = 1024 if device == "cuda" else 48
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    _, model = training_model(device, dtype)
    req = sl_request(4, length)
    calls = []
    exact = attention.attention_backward
    monkeypatch.setattr(attention, "attention_backward", lambda *a, **k: calls.append(1) or exact(*a, **k))
    first, _ = step_gradients(model, req)
    # The CPU's own attention backward is deterministic; CUDA's fused ones are not, so it runs there.
    assert len(calls) == (model.spec.config.num_hidden_layers if device == "cuda" else 0)
    for _ in range(2):
        again, _ = step_gradients(model, req)
        for a, b in zip(again, first):
            assert torch.equal(a, b)
    if device == "cuda":  # the exact backward ran, and agrees with the fused kernels' gradients
        torch.use_deterministic_algorithms(False)
        fused, _ = step_gradients(model, req)
        flat = lambda gs: torch.cat([g.float().flatten() for g in gs])  # noqa: E731
        assert (flat(first) - flat(fused)).norm() / flat(fused).norm() < 5e-2
