"""attention.py's exact backward as Triton kernels, for GPUs: no score matrix in memory.

The chunked backward in attention.py moves every chunk's scores through GPU memory several times, so
its cost grows with the square of the sequence length. These kernels keep each tile of scores in
registers, as flash attention's backward does, and stay deterministic where the fused kernels are
not: every output element is written by one program, which sums in a fixed order (no atomic adds).

- `_lse`: the softmax's log-normaliser per query row (sdpa's forward does not return it);
- `_dkdv`: one program per block of keys of one key/value head, looping over the query heads of its
  group and their query blocks: dK, dV;
- `_dq`: one program per block of queries of one head, looping over key blocks: dQ.

Causal (top-left aligned, as sdpa's is_causal) or unmasked attention in bfloat16 or float16 (the
GEMMs accumulate in float32); masks and float32 take attention.py's path. P and dS are rounded to the
inputs' dtype before their GEMMs, as flash attention rounds them. (Triton's interpreter runs them on
the CPU in float32, which is how tests/test_attention.py checks them without a GPU.)
"""

import triton
import triton.language as tl

BLOCK = 64
LAUNCH = dict(num_warps=4, num_stages=2)  # fewer pipeline stages than the default: less shared memory


@triton.jit
def _lse(Q, K, LSE, scale, T, S, H, G, D: tl.constexpr, CAUSAL: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
         BD: tl.constexpr):
    bh, pid_m = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    kv = (b * (H // G) + h // G).to(tl.int64) * S * D
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, BD)
    q = tl.load(Q + bh.to(tl.int64) * T * D + offs_m[:, None] * D + offs_d[None, :],
                mask=(offs_m[:, None] < T) & (offs_d[None, :] < D), other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    end = (pid_m + 1) * BM if CAUSAL else S  # causal: past the block's last query, all masked
    for n0 in range(0, end, BN):
        offs_n = n0 + tl.arange(0, BN)
        k = tl.load(K + kv + offs_n[:, None] * D + offs_d[None, :],
                    mask=(offs_n[:, None] < S) & (offs_d[None, :] < D), other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        valid = offs_n[None, :] < S
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(s - m_new[:, None]), 1)
        m_i = m_new
    tl.store(LSE + bh.to(tl.int64) * T + offs_m, m_i + tl.log(l_i), mask=offs_m < T)


@triton.jit
def _dkdv(Q, K, V, DO, LSE, DELTA, DK, DV, scale, T, S, H, G, D: tl.constexpr, CAUSAL: tl.constexpr,
          BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
    bhk, pid_n = tl.program_id(0), tl.program_id(1)
    b, hk = bhk // (H // G), bhk % (H // G)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_d = tl.arange(0, BD)
    kv_at = bhk.to(tl.int64) * S * D + offs_n[:, None] * D + offs_d[None, :]
    kv_mask = (offs_n[:, None] < S) & (offs_d[None, :] < D)
    k = tl.load(K + kv_at, mask=kv_mask, other=0.0)
    v = tl.load(V + kv_at, mask=kv_mask, other=0.0)
    dk = tl.zeros([BN, BD], tl.float32)
    dv = tl.zeros([BN, BD], tl.float32)
    start = (pid_n * BN // BM) * BM if CAUSAL else 0  # causal: earlier queries see none of these keys
    for g in range(0, G):
        bh = (b * H + hk * G + g).to(tl.int64)
        for m0 in range(start, T, BM):
            offs_m = m0 + tl.arange(0, BM)
            q_mask = (offs_m[:, None] < T) & (offs_d[None, :] < D)
            q = tl.load(Q + bh * T * D + offs_m[:, None] * D + offs_d[None, :], mask=q_mask, other=0.0)
            do = tl.load(DO + bh * T * D + offs_m[:, None] * D + offs_d[None, :], mask=q_mask, other=0.0)
            lse = tl.load(LSE + bh * T + offs_m, mask=offs_m < T, other=0.0)
            delta = tl.load(DELTA + bh * T + offs_m, mask=offs_m < T, other=0.0)
            valid = (offs_m[None, :] < T) & (offs_n[:, None] < S)
            if CAUSAL:
                valid = valid & (offs_m[None, :] >= offs_n[:, None])
            p_t = tl.where(valid, tl.exp(tl.dot(k, tl.trans(q)) * scale - lse[None, :]), 0.0)  # [BN, BM]
            dv += tl.dot(p_t.to(do.dtype), do)
            ds_t = p_t * (tl.dot(v, tl.trans(do)) - delta[None, :])
            dk += tl.dot(ds_t.to(q.dtype), q)
    tl.store(DK + kv_at, dk * scale, mask=kv_mask)
    tl.store(DV + kv_at, dv, mask=kv_mask)


@triton.jit
def _dq(Q, K, V, DO, LSE, DELTA, DQ, scale, T, S, H, G, D: tl.constexpr, CAUSAL: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
    bh, pid_m = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    kv = (b * (H // G) + h // G).to(tl.int64) * S * D
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, BD)
    q_at = bh.to(tl.int64) * T * D + offs_m[:, None] * D + offs_d[None, :]
    q_mask = (offs_m[:, None] < T) & (offs_d[None, :] < D)
    q = tl.load(Q + q_at, mask=q_mask, other=0.0)
    do = tl.load(DO + q_at, mask=q_mask, other=0.0)
    lse = tl.load(LSE + bh.to(tl.int64) * T + offs_m, mask=offs_m < T, other=0.0)
    delta = tl.load(DELTA + bh.to(tl.int64) * T + offs_m, mask=offs_m < T, other=0.0)
    dq = tl.zeros([BM, BD], tl.float32)
    end = (pid_m + 1) * BM if CAUSAL else S  # causal: past the block's last query, all masked
    for n0 in range(0, end, BN):
        offs_n = n0 + tl.arange(0, BN)
        kv_mask = (offs_n[:, None] < S) & (offs_d[None, :] < D)
        k = tl.load(K + kv + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + kv + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        valid = (offs_n[None, :] < S) & (offs_m[:, None] < T)
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        p = tl.where(valid, tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)  # [BM, BN]
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(DQ + q_at, dq * scale, mask=q_mask)


KERNELS = (_lse, _dkdv, _dq)


def backward(q, k, v, o, do, scale: float, causal: bool):
    """(dQ, dK, dV) as attention.attention_backward computes them, for causal or unmasked attention;
    q, o, do: [B, H, T, D]; k, v: [B, Hk, S, D] (one head size). Kernels are compiled on first use."""
    import torch

    B, H, T, D = q.shape
    Hk, S = k.shape[1], k.shape[2]
    q, k, v, do = (t.contiguous() for t in (q, k, v, do))
    delta = (do.float() * o.float()).sum(-1).contiguous()  # rowsum(dO ∘ O): [B, H, T]
    lse = torch.empty((B, H, T), dtype=torch.float32, device=q.device)
    dq = torch.empty((B, H, T, D), dtype=torch.float32, device=q.device)
    dk = torch.empty((B, Hk, S, D), dtype=torch.float32, device=q.device)
    dv = torch.empty((B, Hk, S, D), dtype=torch.float32, device=q.device)
    shape = dict(D=D, CAUSAL=causal, BM=BLOCK, BN=BLOCK, BD=max(16, triton.next_power_of_2(D)))
    # (sequence × head, block): the grid's first axis takes up to 2³¹ − 1 programs, the others 65,535.
    _lse[(B * H, triton.cdiv(T, BLOCK))](q, k, lse, scale, T, S, H, H // Hk, **shape, **LAUNCH)
    _dkdv[(B * Hk, triton.cdiv(S, BLOCK))](q, k, v, do, lse, delta, dk, dv, scale, T, S, H, H // Hk, **shape, **LAUNCH)
    _dq[(B * H, triton.cdiv(T, BLOCK))](q, k, v, do, lse, delta, dq, scale, T, S, H, H // Hk, **shape, **LAUNCH)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
