"""Training attention whose backward is deterministic on a GPU.

PyTorch's fused attention kernels (flash, memory-efficient, cuDNN) accumulate the backward's
gradients with atomic adds unless deterministic mode is strict (`warn_only=False`). The engine runs
deterministic mode with `warn_only=True`, because the fast sampler's cache writes (`put_` to distinct
offsets, deterministic but flagged as not) would raise otherwise; under it PyTorch warns once and
runs the non-deterministic backward, so two runs of one step on one GPU give different adapter
gradients. The engine's training instances use `ATTENTION` instead of transformers' `sdpa`:

- the forward is transformers' own `sdpa` call (same kernels, bitwise the same outputs);
- where the backward would run a fused kernel on a GPU under deterministic mode, it is computed
  exactly: by attention_triton's kernels (causal or unmasked half-precision attention; no score
  matrix in memory), else here, in chunks of query rows: S = s·QKᵀ recomputed, P = softmax(S),
  dV = Pᵀ·dO, dS = P ∘ (dO·Vᵀ − rowsum(dO ∘ O)), dQ = s·dS·K, dK = s·dSᵀ·Q. GEMMs take
  half-precision inputs with float32 accumulation and output, P and dS are rounded to the inputs'
  dtype before their GEMMs (as flash attention does), and every sum is a GEMM or a fixed-order
  accumulation: bitwise reproducible. The query heads of a grouped-query key/value head are packed
  as rows of that head, so keys and values are never repeated and the sums over a group happen
  inside the GEMMs.
- elsewhere (CPU, whose attention backward is deterministic already; no gradient; deterministic
  mode off; what the exact backward does not cover: dropout, position biases, caches, masks per
  head) it is transformers' `sdpa` unchanged.
"""

import logging
import math

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

log = logging.getLogger(__name__)

ATTENTION = "tinker_sdpa"

# Score elements per chunk of query rows (float32): ~256 MB for each of the few such tensors alive.
CHUNK_ELEMENTS = 1 << 26

_BMM_FLOAT32_OUT: dict = {}
_logged: set = set()
# attention_triton's kernels on GPUs: None until first used, then True, or why not (they are checked
# once per process against the chunked backward below, which stands in for them if they fail).
triton_kernels: bool | str | None = None


def replaces_fused_backward(query: torch.Tensor) -> bool:
    """Where the fused kernels' backward would be non-deterministic under deterministic mode."""
    return query.device.type != "cpu" and torch.are_deterministic_algorithms_enabled()


def uncovered(query, key, attention_mask, dropout, kwargs) -> str | None:
    """Why the exact backward cannot stand in for sdpa's here, or None."""
    if dropout:
        return "attention dropout"
    if kwargs.get("position_bias") is not None or kwargs.get("cache") is not None or kwargs.get("softcap") is not None:
        return "position bias, cache or softcap"
    if query.shape[2] != key.shape[2] or query.shape[1] % key.shape[1]:
        return "queries and keys of other lengths or head counts"
    if attention_mask is not None and (attention_mask.dim() != 4 or attention_mask.shape[1] != 1):
        return "a mask per head"
    return None


def deterministic_sdpa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
    """transformers' attention-function signature: [B, H, T, D] inputs → ([B, T, H, D], None)."""

    def fused(q, k, v):
        return sdpa_attention_forward(module, q, k, v, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)[0]

    wants_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    if not (wants_grad and replaces_fused_backward(query)):
        return fused(query, key, value), None
    reason = uncovered(query, key, attention_mask, dropout, kwargs)
    if reason is not None:
        if reason not in _logged:
            _logged.add(reason)
            log.warning("training attention with %s keeps PyTorch's fused backward, non-deterministic on %s",
                        reason, query.device.type)
        return fused(query, key, value), None
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(causal and attention_mask is None and query.shape[2] > 1)  # as sdpa_attention_forward decides
    scale = scaling if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
    return _ExactBackward.apply(query, key, value, attention_mask, scale, causal, fused), None


def register() -> None:
    """Makes ATTENTION a transformers attention implementation, with sdpa's masks."""
    AttentionInterface.register(ATTENTION, deterministic_sdpa)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)


def use_in(model: torch.nn.Module) -> None:
    """Switches a model instance (its own config: instance_sharing_weights copies it) to ATTENTION."""
    register()
    model.config._attn_implementation = ATTENTION


def bmm_float32_out(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether torch.bmm takes `dtype` inputs on `device` and writes float32 (CUDA's bmm.dtype)."""
    if dtype in (torch.float32, torch.float64):
        return False
    key = (device.type, dtype)
    if key not in _BMM_FLOAT32_OUT:
        try:
            a = torch.ones((2, 3, 4), dtype=dtype, device=device)  # operands as attention_backward passes them
            _BMM_FLOAT32_OUT[key] = all(
                torch.bmm(x, y, out_dtype=torch.float32).dtype == torch.float32
                for x, y in ((a, a.transpose(1, 2)), (a.transpose(1, 2), a), (a[:, :2], a[:, :2].transpose(1, 2))))
        except (TypeError, RuntimeError, NotImplementedError):
            _BMM_FLOAT32_OUT[key] = False
    return _BMM_FLOAT32_OUT[key]


class _ExactBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query, key, value, mask, scale, causal, fused):
        out = fused(query, key, value)
        ctx.save_for_backward(query, key, value, out, mask)
        ctx.scale, ctx.causal = scale, causal
        return out

    @staticmethod
    def backward(ctx, grad_out):
        query, key, value, out, mask = ctx.saved_tensors
        args = (query, key, value, out.transpose(1, 2), grad_out.transpose(1, 2), ctx.scale, ctx.causal)
        kernels_apply = (mask is None and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16)
                         and value.shape[-1] == query.shape[-1])
        grads = kernel_backward(*args) if kernels_apply else None
        if grads is None:
            grads = attention_backward(*args, mask)
        return (*grads, None, None, None, None)


def kernel_backward(q, k, v, o, do, scale, causal):
    """attention_triton's backward, or None where its kernels are unavailable or failed their check."""
    global triton_kernels
    if triton_kernels is True:
        from . import attention_triton

        return attention_triton.backward(q, k, v, o, do, scale, causal)
    if triton_kernels is not None:
        return None
    try:  # first use: compiled, then checked against the chunked backward
        from . import attention_triton

        grads = attention_triton.backward(q, k, v, o, do, scale, causal)
        expected = attention_backward(q, k, v, o, do, scale, causal)
        errors = [float((g.float() - e.float()).norm() / e.float().norm().clamp_min(1e-30))
                  for g, e in zip(grads, expected)]
        if not max(errors) < 1e-2:
            raise RuntimeError(f"relative errors {errors} against the chunked backward")
    except Exception as e:  # no Triton, a compile failure on this GPU, or wrong results: the chunked path
        triton_kernels = f"{type(e).__name__}: {e}"
        log.warning("attention backward kernels unavailable (%s); using the chunked exact backward", triton_kernels)
        return None
    triton_kernels = True
    return grads


def attention_backward(q, k, v, o, do, scale, causal, mask=None, chunk_elements=None):
    """(dQ, dK, dV) of softmax(s·QKᵀ + mask)·V. q, o, do: [B, H, T, D]; k, v: [B, Hk, S, D]; mask:
    None, or bool (True attends) / additive float, broadcastable to [B, 1, T, S]."""
    B, H, T, D = q.shape
    Hk, S, Dv = k.shape[1], k.shape[2], v.shape[3]
    G, N = H // Hk, B * Hk
    dtype = q.dtype
    half_gemm = bmm_float32_out(q.device, dtype)

    acc = torch.promote_types(dtype, torch.float32)

    def gemm(a, b):  # float32 result; half-precision operands stay half (rounded as flash rounds them)
        if half_gemm:
            return torch.bmm(a.to(dtype), b.to(dtype), out_dtype=torch.float32)
        return torch.bmm(a.to(acc), b.to(acc))

    def rows(x, r0, r1):  # [B, H, T, X] → [N, G·c, X]: a key/value head's query heads as rows
        return x[:, :, r0:r1].reshape(N, G * (r1 - r0), x.shape[-1])

    keys, values = k.reshape(N, S, D), v.reshape(N, S, Dv)
    delta = (do.to(acc) * o.to(acc)).sum(-1, keepdim=True)  # rowsum(dO ∘ O): [B, H, T, 1]
    dq = torch.empty((B, H, T, D), dtype=acc, device=q.device)
    dk = torch.zeros((N, S, D), dtype=acc, device=q.device)
    dv = torch.zeros((N, S, Dv), dtype=acc, device=q.device)
    step = max(1, (chunk_elements or CHUNK_ELEMENTS) // max(1, B * H * S))
    for r0 in range(0, T, step):
        r1 = min(T, r0 + step)
        c, s_end = r1 - r0, (r1 if causal else S)  # causal: later keys are masked for every row here
        qc, doc = rows(q, r0, r1), rows(do, r0, r1)
        scores = gemm(qc, keys[:, :s_end].transpose(1, 2)).mul_(scale)  # [N, G·c, s_end]
        if causal:
            allowed = torch.arange(s_end, device=q.device)[None, :] <= torch.arange(r0, r1, device=q.device)[:, None]
            scores.masked_fill_(~allowed.repeat(G, 1), float("-inf"))
        elif mask is not None:
            m = mask[:, :, r0:r1, :s_end].expand(B, 1, c, s_end)
            m = m[:, :, None].expand(B, Hk, G, c, s_end).reshape(N, G * c, s_end)
            if m.dtype == torch.bool:
                scores.masked_fill_(~m, float("-inf"))
            else:
                scores.add_(m.to(acc))
        p = torch.softmax(scores, dim=-1)
        del scores
        if mask is not None:  # a row that attends nowhere: no gradient (not softmax's NaN)
            p = p.nan_to_num_(0.0)
        dv[:, :s_end] += gemm(p.transpose(1, 2), doc)
        ds = gemm(doc, values[:, :s_end].transpose(1, 2)).sub_(rows(delta, r0, r1)).mul_(p)
        del p
        dq[:, :, r0:r1] = gemm(ds, keys[:, :s_end]).mul_(scale).view(B, Hk, G, c, D).reshape(B, H, c, D)
        dk[:, :s_end] += gemm(ds.transpose(1, 2), qc).mul_(scale)
    return dq.to(dtype), dk.view(B, Hk, S, D).to(k.dtype), dv.view(B, Hk, S, Dv).to(v.dtype)
