"""The unembedding step, fused for speed with 100k+ vocabularies.

Float32 heads (the CPU default): `logits = augment(h) @ weight.T` folds a LoRA adapter on the LM
head into a single matmul ([h, s·hAᵀ] @ [W, B]ᵀ). Half-precision heads (bf16 on CUDA): the base
part stays in bf16 with float32 accumulation and float32 output, the LoRA part (s·hAᵀ)·Bᵀ runs in
float32 beside it, as peft runs float32 adapters on a bf16 base — no float32 copy of the
[vocab, hidden] matrix and no float32 GEMM over it.

Either way, target logprobs are computed chunk by chunk with a hand-written backward
(softmax − one-hot) so that no [tokens, vocab] tensor other than one chunk's logits is ever
materialised, and the backward computes gradients only for what trains (B and the hidden
states), never for the frozen base matrix.
"""

import torch

# Logits elements per chunk (~64 MB in float32); on a GPU, chunks big enough to keep the GEMMs
# efficient (~512 MB: ~880 rows of a 152k vocabulary).
CHUNK_ELEMENTS = 1 << 24
CUDA_CHUNK_ELEMENTS = 1 << 27

_MM_FLOAT32_OUT: dict = {}


def _lora_parts(head):
    """(base weight, A, B, scaling) when `head` is an unmerged peft LoRA Linear, else None."""
    if not all(hasattr(head, a) for a in ("base_layer", "lora_A", "lora_B", "scaling", "active_adapters")):
        return None
    adapters = [a for a in head.active_adapters if a in head.lora_A]
    if len(adapters) != 1 or getattr(head, "merged", False) or head.base_layer.bias is not None:
        return None
    name = adapters[0]
    return head.base_layer.weight, head.lora_A[name].weight, head.lora_B[name].weight, head.scaling[name]


def mm_float32_out(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether torch.mm takes `dtype` inputs on `device` and writes float32 (float32 accumulation and
    no rounding of logits to bf16, which would move logprobs by ~1e-2)."""
    if dtype == torch.float32:
        return False
    key = (device.type, dtype)
    if key not in _MM_FLOAT32_OUT:
        try:
            a = torch.ones((2, 2), dtype=dtype, device=device)
            _MM_FLOAT32_OUT[key] = torch.mm(a, a, out_dtype=torch.float32).dtype == torch.float32
        except (TypeError, RuntimeError):
            _MM_FLOAT32_OUT[key] = False
    return _MM_FLOAT32_OUT[key]


class HeadProjection:
    def __init__(self, head: torch.nn.Module):
        self.module = head
        self.weight = None  # float32 [vocab, hidden (+ rank)] (float32 path)
        self.base = None  # half-precision [vocab, hidden] (mixed path)
        self.lora_a = None
        self.lora_b = None
        self.scaling = 1.0
        parts = _lora_parts(head)
        if parts is not None:
            base_weight, self.lora_a, self.lora_b, self.scaling = parts
        elif isinstance(head, torch.nn.Linear) and head.bias is None:
            base_weight = head.weight
        else:
            return
        if base_weight.dtype not in (torch.bfloat16, torch.float16):
            self.weight = base_weight.float()
            if self.lora_b is not None:
                self.weight = torch.cat([self.weight, self.lora_b.float()], dim=1)
        elif mm_float32_out(base_weight.device, base_weight.dtype):
            self.base = base_weight
        else:
            # No half-precision GEMM with float32 output here (CPU): one float32 copy per projection.
            self.base = base_weight.float()

    @property
    def vocab(self):
        for w in (self.weight, self.base):
            if w is not None:
                return w.shape[0]
        return None

    def augment(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden.float()
        if self.lora_a is None:
            return hidden
        return torch.cat([hidden, self._lora_hidden(hidden)], dim=-1)

    def _lora_hidden(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.scaling * (hidden.float() @ self.lora_a.float().T)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.base is not None:
            shape = hidden.shape[:-1]
            flat = hidden.reshape(-1, hidden.shape[-1])
            lora = None if self.lora_b is None else self._lora_hidden(flat)
            b = None if self.lora_b is None else self.lora_b.float()
            return _mixed_logits(flat, lora, self.base, b).view(*shape, -1)
        if self.weight is None:
            return self.module(hidden).float()
        return self.augment(hidden) @ self.weight.T

    def target_logprobs(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log softmax(logits)[targets]; hidden [N, H], targets [N, K] → [N, K]."""
        vocab = self.vocab
        if vocab is None:
            logits = self.logits(hidden)
            return logits.gather(1, targets) - torch.logsumexp(logits, dim=-1, keepdim=True)
        chunk = CUDA_CHUNK_ELEMENTS if hidden.device.type == "cuda" else CHUNK_ELEMENTS
        rows = max(1, chunk // vocab)
        if self.base is not None:
            lora = None if self.lora_b is None else self._lora_hidden(hidden)
            return _MixedTargetLogprobs.apply(hidden, lora, self.base, self.lora_b, targets, rows)
        frozen = self.weight.shape[1] - (0 if self.lora_b is None else self.lora_b.shape[1])
        return _FusedTargetLogprobs.apply(self.augment(hidden), self.weight, targets, rows, frozen)


def _softmax_grad_(logits, lse, g, targets):
    """d/dlogits of Σ_k g_k·(logit[t_k] − lse) = scatter(g) − (Σ_k g_k)·softmax, in place."""
    logits.sub_(lse).exp_().mul_(-g.sum(dim=1, keepdim=True))
    return logits.scatter_add_(1, targets, g)


class _FusedTargetLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, targets, rows, frozen):
        out, lses = [], []
        for i in range(0, x.shape[0], rows):
            logits = x[i : i + rows] @ weight.T
            lse = torch.logsumexp(logits, dim=-1, keepdim=True)
            out.append(logits.gather(1, targets[i : i + rows]) - lse)
            lses.append(lse)
        ctx.save_for_backward(x, weight, targets, torch.cat(lses))
        ctx.rows, ctx.frozen = rows, frozen
        return torch.cat(out)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, targets, lse = ctx.saved_tensors
        rows, frozen = ctx.rows, ctx.frozen
        grad_x = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        # Only the columns after `frozen` (the LoRA B part of [W, B]) train: no GEMM for W's gradient.
        grad_b = weight.new_zeros((weight.shape[0], weight.shape[1] - frozen)) if ctx.needs_input_grad[1] else None
        for i in range(0, x.shape[0], rows):
            grad_logits = _softmax_grad_(x[i : i + rows] @ weight.T, lse[i : i + rows], grad_out[i : i + rows], targets[i : i + rows])
            if grad_x is not None:
                grad_x[i : i + rows] = grad_logits @ weight
            if grad_b is not None:
                grad_b.addmm_(grad_logits.T, x[i : i + rows, frozen:])
        grad_w = None
        if grad_b is not None:
            grad_w = weight.new_zeros(weight.shape)
            grad_w[:, frozen:] = grad_b
        return grad_x, grad_w, None, None, None


class _MixedTargetLogprobs(torch.autograd.Function):
    """Half-precision hidden states and a frozen base head (half precision, or its float32 copy
    where no float32-output GEMM exists) plus an optional float32 LoRA term: logits =
    mm(h, Wᵀ → float32) + u·Bᵀ with u = s·hAᵀ computed by the caller (autograd carries u's
    gradient on to h and A)."""

    @staticmethod
    def forward(ctx, h, u, base, lora_b, targets, rows):
        b = None if lora_b is None else lora_b.float()
        out, lses = [], []
        for i in range(0, h.shape[0], rows):
            logits = _mixed_logits(h[i : i + rows], None if u is None else u[i : i + rows], base, b)
            lse = torch.logsumexp(logits, dim=-1, keepdim=True)
            out.append(logits.gather(1, targets[i : i + rows]) - lse)
            lses.append(lse)
        ctx.save_for_backward(h, u, base, lora_b, targets, torch.cat(lses))
        ctx.rows = rows
        return torch.cat(out)

    @staticmethod
    def backward(ctx, grad_out):
        h, u, base, lora_b, targets, lse = ctx.saved_tensors
        rows = ctx.rows
        b = None if lora_b is None else lora_b.float()
        need_h, need_u, _, need_b = ctx.needs_input_grad[:4]
        grad_h = torch.empty_like(h) if need_h else None
        grad_u = torch.empty_like(u) if need_u else None
        grad_b = torch.zeros_like(b) if need_b else None
        for i in range(0, h.shape[0], rows):
            u_i = None if u is None else u[i : i + rows]
            grad_logits = _softmax_grad_(_mixed_logits(h[i : i + rows], u_i, base, b), lse[i : i + rows], grad_out[i : i + rows], targets[i : i + rows])
            if grad_h is not None:
                grad_h[i : i + rows] = grad_logits.to(base.dtype) @ base
            if grad_u is not None:
                grad_u[i : i + rows] = grad_logits @ b
            if grad_b is not None:
                grad_b.addmm_(grad_logits.T, u_i)
        if grad_b is not None:
            grad_b = grad_b.to(lora_b.dtype)
        return grad_h, grad_u, None, grad_b, None, None


def _mixed_logits(h, u, base, b):
    if base.dtype == torch.float32:
        logits = h.float() @ base.T
    else:
        logits = torch.mm(h.to(base.dtype), base.T, out_dtype=torch.float32)
    if u is not None:
        logits.addmm_(u, b.T)
    return logits
