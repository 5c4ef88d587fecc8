"""Training attention (attention.py): the exact backward equals autograd through attention, the
training instances use it where the fused kernels' backward is not deterministic, and a training
step is bitwise reproducible on every device (on CUDA, the case the exact backward exists for)."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from devices import DEVICES, cpu_only
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


@cpu_only
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


@cpu_only
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


SHAPES = [(1, 2, 1, 37, 16, True), (2, 4, 2, 70, 24, True), (1, 4, 4, 65, 16, False), (1, 2, 2, 130, 32, True)]

# Triton's interpreter runs the kernels on the CPU with numpy (float32: its bfloat16 is not numpy's).
# Its range() needs a plain number where a compiled kernel takes a scalar tensor: a bound derived
# from tl.program_id (a 1-element array there) is read as its one element.
INTERPRETED = textwrap.dedent("""
    import json, sys
    import numpy as np, torch
    import triton.runtime.interpreter as interpreter
    patch = interpreter._patch_lang_tensor
    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))
    interpreter._patch_lang_tensor = patched
    from tinker_engine import attention_triton
    errors = []
    for B, H, Hk, T, D, causal in json.loads(sys.argv[1]):
        g = torch.Generator().manual_seed(T)
        q = torch.randn(B, H, T, D, generator=g, dtype=torch.float64, requires_grad=True)
        k, v = (torch.randn(B, Hk, T, D, generator=g, dtype=torch.float64, requires_grad=True) for _ in "kv")
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3, enable_gqa=True)
        grad_out = torch.randn_like(out)
        expected = torch.autograd.grad(out, (q, k, v), grad_out)
        got = attention_triton.backward(*(t.detach().float() for t in (q, k, v, out, grad_out)), 0.3, causal)
        errors.append([float((a.double() - e).abs().max() / e.abs().max()) for a, e in zip(got, expected)])
    print(json.dumps(errors))
""")


@cpu_only
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="no Triton here")
def test_the_kernels_equal_autograd_through_attention_in_tritons_interpreter():
    engine = Path(__file__).resolve().parents[1]
    path = os.pathsep.join(filter(None, [str(engine), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=path)
    run = subprocess.run([sys.executable, "-c", INTERPRETED, json.dumps(SHAPES)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == len(SHAPES)
    for shape, e in zip(SHAPES, errors):
        assert max(e) < 5e-6, (shape, e)


@cpu_only
def test_kernels_that_fail_on_first_use_leave_the_chunked_backward_for_good(monkeypatch, caplog):
    # Here they fail as on a GPU where they do not compile: no Triton, or no GPU to launch them on.
    monkeypatch.setattr(attention, "triton_kernels", None)
    q, k, v = (t.to(torch.bfloat16) for t in inputs(length=20, dim=16))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    with caplog.at_level("WARNING"):
        assert attention.kernel_backward(q, k, v, out, torch.ones_like(out), 0.25, True) is None
    assert isinstance(attention.triton_kernels, str) and "using the chunked exact backward" in caplog.text
    monkeypatch.setattr(attention.log, "warning", lambda *a: pytest.fail("tried again"))
    assert attention.kernel_backward(q, k, v, out, torch.ones_like(out), 0.25, True) is None


@cpu_only
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="no Triton here")
def test_the_kernels_compile_for_ampere_and_hopper_within_their_shared_memory():
    # Compiled for the GPU (PTX, then machine code by Triton's own ptxas) without one, as the engine
    # compiles them on first use: a kernel that only a GPU could reject is rejected here.
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tinker_engine import attention_triton

    types = {**dict.fromkeys(("Q", "K", "V", "DO"), "*bf16"), "scale": "fp32",
             **dict.fromkeys(("LSE", "DELTA", "DK", "DV", "DQ"), "*fp32"), **dict.fromkeys(("T", "S", "H", "G"), "i32")}
    shared_limit = {80: 163 * 1024, 90: 227 * 1024}  # A100's and H100/H200's per-block maxima
    for arch, dim, causal in [(90, 128, True), (90, 64, False), (80, 128, True)]:
        for kernel in attention_triton.KERNELS:
            source = ASTSource(kernel, {a: types.get(a, "constexpr") for a in kernel.arg_names},
                               constexprs=dict(D=dim, CAUSAL=causal, BM=attention_triton.BLOCK,
                                               BN=attention_triton.BLOCK, BD=dim))
            compiled = triton.compile(source, target=GPUTarget("cuda", arch, 32), options=attention_triton.LAUNCH)
            assert 0 < compiled.metadata.shared <= shared_limit[arch], (arch, dim, kernel.fn.__name__)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only")
def test_the_kernels_agree_with_the_chunked_backward_and_repeat_bitwise_on_cuda():
    from tinker_engine import attention_triton

    dim = 128  # Qwen3's and Llama's head size (each head size is a compilation of its own)
    # The first: the GPU check's training batch (8 × 512 tokens of Qwen3-0.6B's heads), so that its
    # compilation (Triton specialises on lengths divisible by 16) is on disk before the benchmarks'
    # engines start. The last: more (sequence, head) pairs than a CUDA grid's second axis could take.
    for B, H, Hk, T, causal in [(8, 16, 8, 512, True), (2, 16, 8, 1000, True), (1, 8, 8, 300, False),
                                (3, 4, 1, 77, True), (4200, 16, 8, 3, True)]:
        g = torch.Generator().manual_seed(T)
        q = torch.randn(B, H, T, dim, generator=g).to("cuda", torch.bfloat16)
        k, v = (torch.randn(B, Hk, T, dim, generator=g).to("cuda", torch.bfloat16) for _ in "kv")
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        grad_out = torch.randn(out.shape, generator=g).to("cuda", torch.bfloat16)
        scale = dim ** -0.5
        got = attention_triton.backward(q, k, v, out, grad_out, scale, causal)
        again = attention_triton.backward(q, k, v, out, grad_out, scale, causal)
        chunked = attention.attention_backward(q, k, v, out, grad_out, scale, causal)
        for a, b, c in zip(got, again, chunked):
            assert a.dtype == torch.bfloat16 and torch.equal(a, b)
            assert (a.float() - c.float()).norm() / c.float().norm() < 1e-2


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


@cpu_only
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


@cpu_only
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
    monkeypatch.setattr(attention, "triton_kernels", None)  # their first use (and check) in this test
    calls = []
    exact = attention.attention_backward
    monkeypatch.setattr(attention, "attention_backward", lambda *a, **k: calls.append(1) or exact(*a, **k))
    first, _ = step_gradients(model, req)
    # The CPU's own attention backward is deterministic; CUDA's fused ones are not, so it runs there:
    # the Triton kernels, checked once against the chunked backward (which runs for that check).
    if device == "cuda":
        assert attention.triton_kernels is True, attention.triton_kernels
    assert len(calls) == (1 if device == "cuda" else 0)
    for _ in range(2):
        again, _ = step_gradients(model, req)
        for a, b in zip(again, first):
            assert torch.equal(a, b)
    if device == "cuda":  # the exact backward ran, and agrees with the fused kernels' gradients
        torch.use_deterministic_algorithms(False)
        fused, _ = step_gradients(model, req)
        flat = lambda gs: torch.cat([g.float().flatten() for g in gs])  # noqa: E731
        assert (flat(first) - flat(fused)).norm() / flat(fused).norm() < 5e-2
