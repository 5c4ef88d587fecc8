"""The fast sampling path: a decoder written for serving, for the Llama family of architectures.

What makes it fast, and why each part is there:
- Base weights are fused once per base model (q/k/v in one matrix, gate/up in one) and shared by
  every sampler snapshot; a snapshot's LoRA adapter stays unmerged and is applied in float32 beside
  the base matmul, exactly as peft applies it in training, so sampled logprobs agree with the
  trainer's and switching snapshots costs a copy of the adapter only.
- Every request's rows decode in one batch per snapshot ("lane") with a slot KV cache: row i
  owns cache slot i, so attention reads a plain view of the cache, with no gather and no padding
  copies; a retired row's slot is filled by moving the last rows down.
- On CUDA one decode step (all layers + the head) is a captured CUDA graph per (batch bucket,
  length bucket): a step costs a few kernel launches' worth of CPU time instead of hundreds.
- The device does not wait for the host: a step queues the decode of every row's draw before it
  reads the draws back (waiting for their copy alone), then records tokens, checks stop conditions
  and retires stopped rows while that decode runs. Per-row counters live on the device between
  row changes, so such a step uploads nothing; what a row change or a prefill uploads goes through
  pinned memory without a sync (transfers.py), so no step makes the host wait for the device.
- Prompts are prefilled together, right-padded into one batch.
- Draws come from a counter-based generator: the uniform of sample s's t-th token is a hash of
  (sample seed, t), so a row's draws never depend on which other rows share its batch.

What is not reproducible: logits of a row depend, in the last float bits, on the batch it decoded
in (matrix kernels are not batch-invariant), so two runs under different load may sample
different tokens from the same seed. The reference path (sampler.py) stays the default on CPU,
where the durable runs' crash-equality guarantee rests on bitwise reproducible sampling.
"""

import logging
import warnings
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .images import is_vision_model
from .head import mm_float32_out
from .sampler import SamplingParams, StopChecker, _unwrap, record_draws, sample_seed
from .transfers import start_download, upload

log = logging.getLogger("tinker_engine")
# Deterministic mode warns about every put_ without accumulation, since repeated offsets would
# leave the result to the kernel's timing; the decode step's offsets never repeat.
PUT_WARNING = "put_ does not have a deterministic implementation"
warnings.filterwarnings("ignore", message=PUT_WARNING)

SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")
POSITION_ONLY_ROPE = ("default", "linear", "llama3", "yarn")
MIN_LENGTH_BUCKET = 64
BATCH_STEP = 8  # decode batches above 8 rows run at multiples of 8 (or more: decode_bucket)
PREFILL_TOKENS = 16384  # padded prompt tokens per prefill batch
MAX_IDLE_LANES = 2


def unsupported_reason(model) -> str | None:
    """Why `model` cannot decode on the fast path, or None when it can."""
    hf = _unwrap(model)
    config = hf.config
    if is_vision_model(hf):
        return "a vision-language model (its image features and M-RoPE positions are computed on the reference path)"
    if getattr(config, "model_type", None) not in SUPPORTED_MODEL_TYPES:
        return f"architecture {getattr(config, 'model_type', None)!r} is not one of {', '.join(SUPPORTED_MODEL_TYPES)}"
    if getattr(config, "use_sliding_window", False) and getattr(config, "sliding_window", None):
        return "sliding-window attention"
    if any(t != "full_attention" for t in (getattr(config, "layer_types", None) or [])):
        return "layers other than full attention"
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") not in POSITION_ONLY_ROPE:
        return f"rope type {rope.get('rope_type')!r}"
    decoder = hf.get_decoder()
    if not all(hasattr(decoder, a) for a in ("embed_tokens", "layers", "norm", "rotary_emb")):
        return "decoder layout"
    for layer in decoder.layers:
        attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
        if attn is None or mlp is None or not all(
            hasattr(attn, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj", "scaling")
        ) or not all(hasattr(mlp, p) for p in ("gate_proj", "up_proj", "down_proj", "act_fn")):
            return "decoder layer layout"
    return None


# --------------------------------------------------------------------------- weights


def _base_linear(module) -> torch.nn.Linear:
    return getattr(module, "base_layer", module)


def _lora_pair(module):
    """(A [r, in], B·scaling [out, r]) in float32 for a peft LoRA Linear, or None."""
    names = [a for a in getattr(module, "active_adapters", []) if a in getattr(module, "lora_A", {})]
    if not names or getattr(module, "merged", False):
        return None
    if len(names) != 1:
        raise ValueError("more than one active adapter")
    name = names[0]
    a = module.lora_A[name].weight.detach().float()
    b = module.lora_B[name].weight.detach().float() * module.scaling[name]
    return a, b


class _Group:
    """Linear modules that read the same input, as one matmul (q/k/v; gate/up; or one module)."""

    def __init__(self, modules: list):
        bases = [_base_linear(m) for m in modules]
        self.modules = modules
        self.sizes = [b.out_features for b in bases]
        self.weight = torch.cat([b.weight.detach() for b in bases]) if len(bases) > 1 else bases[0].weight.detach()
        biases = [b.bias for b in bases]
        if all(b is None for b in biases):
            self.bias = None
        else:
            self.bias = torch.cat([
                b.detach() if b is not None else torch.zeros(n, dtype=self.weight.dtype, device=self.weight.device)
                for b, n in zip(biases, self.sizes)
            ])

    def lora(self, modules: list):
        """This group's adapter in a snapshot's module tree: (A_cat [Σr, in], B_blockdiag [out, Σr])."""
        pairs = [_lora_pair(m) for m in modules]
        if all(p is None for p in pairs):
            return None
        device = self.weight.device
        ranks = [0 if p is None else p[0].shape[0] for p in pairs]
        a = torch.cat([p[0] for p in pairs if p is not None])
        b = torch.zeros((sum(self.sizes), sum(ranks)), dtype=torch.float32, device=device)
        row = col = 0
        for p, n, r in zip(pairs, self.sizes, ranks):
            if p is not None:
                b[row : row + n, col : col + r] = p[1]
            row, col = row + n, col + r
        return a.to(device), b


# Norm classes of the supported families, all weight · x/√(mean(x²) + ε) with float32 statistics.
RMS_NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm", "MistralRMSNorm")


def _fused_norm(module):
    """An RMSNorm module as F.rms_norm: one fused kernel on CUDA where the module's eager code is
    eight (two casts, pow, mean, add, rsqrt, two muls). The weight is applied before the single
    rounding to the input's dtype, so in bfloat16 a value may differ from the module's by that
    rounding. Other norms (or None) are returned as they are."""
    if module is None or type(module).__name__ not in RMS_NORMS:
        return module
    weight, eps = module.weight.detach(), module.variance_epsilon
    return lambda x: F.rms_norm(x, weight.shape, weight, eps)


def _layer_modules(layer) -> list:
    """The module lists of a decoder layer's groups, in a fixed order."""
    a, m = layer.self_attn, layer.mlp
    return [[a.q_proj, a.k_proj, a.v_proj], [a.o_proj], [m.gate_proj, m.up_proj], [m.down_proj]]


class BaseWeights:
    """A base model in decode form (fused groups), shared by all lanes of that model."""

    def __init__(self, model):
        hf = _unwrap(model)
        config = hf.config
        decoder = hf.get_decoder()
        self.config = config
        self.embed = decoder.embed_tokens
        self.norm = _fused_norm(decoder.norm)
        self.rotary = decoder.rotary_emb
        self.layers = []
        for layer in decoder.layers:
            attn = layer.self_attn
            self.layers.append({
                "ln1": _fused_norm(layer.input_layernorm),
                "ln2": _fused_norm(layer.post_attention_layernorm),
                "q_norm": _fused_norm(getattr(attn, "q_norm", None)),
                "k_norm": _fused_norm(getattr(attn, "k_norm", None)),
                "act": layer.mlp.act_fn,
                "groups": [_Group(ms) for ms in _layer_modules(layer)],
                "scaling": attn.scaling,
            })
        head = hf.get_output_embeddings()
        self.head = _Group([head])
        first = decoder.layers[0].self_attn
        self.head_dim = first.head_dim
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.vocab = self.head.sizes[0]
        self.dtype = self.head.weight.dtype
        self.device = self.head.weight.device
        self.mm_float32_out = mm_float32_out(self.device, self.dtype)
        self._rope = None  # (cos, signed sin) tables [T, head_dim]: see _rotate

    def lora_of(self, model) -> list | None:
        """Per layer per group (A, B) — plus the head's as the last entry — of a peft snapshot."""
        hf = _unwrap(model)
        decoder = hf.get_decoder()
        out = []
        for base_layer, layer in zip(self.layers, decoder.layers):
            out.append([g.lora(ms) for g, ms in zip(base_layer["groups"], _layer_modules(layer))])
        out.append([self.head.lora([hf.get_output_embeddings()])])
        if all(p is None for groups in out for p in groups):
            return None
        return out

    def rope(self, length: int):
        if self._rope is None or self._rope[0].shape[0] < length:
            size = max(length, 2 * (0 if self._rope is None else self._rope[0].shape[0]))
            positions = torch.arange(size, device=self.device)[None]
            dummy = torch.zeros(1, dtype=self.dtype, device=self.device)
            cos, sin = self.rotary(dummy, positions)
            cos, sin, half = cos[0], sin[0], sin.shape[-1] // 2
            self._rope = (cos, torch.cat((-sin[:, :half], sin[:, half:]), dim=-1))  # sin signed for _rotate
        return self._rope


def _project(x: torch.Tensor, group: _Group, lora) -> torch.Tensor:
    y = F.linear(x, group.weight, group.bias)
    if lora is None:
        return y
    # As peft does: the adapter path in float32, added before casting back. addmm_ adds it inside
    # the second matmul: no [tokens, out] temporary and no pass of its own for the sum.
    a, b = lora
    out = y.float().reshape(-1, y.shape[-1])
    out.addmm_((x.float() @ a.T).reshape(out.shape[0], -1), b.T)
    return out.view(y.shape).to(y.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, x·cos + rotate_half(x)·sin, with rotate_half(x)·sin computed as
    roll(x, half)·[−sin₁, sin₂]: the same values bit for bit (a sign flip is exact), and one kernel
    where negating and concatenating the halves are two."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


def _head_logits(base: BaseWeights, x: torch.Tensor, lora) -> torch.Tensor:
    """Float32 logits; like the trainer's head, the adapter path in float32."""
    if base.dtype == torch.float32:
        logits = F.linear(x, base.head.weight)
    elif base.mm_float32_out:
        logits = torch.mm(x, base.head.weight.T, out_dtype=torch.float32)
    else:
        logits = x.float() @ base.head.weight.float().T
    if lora is not None:
        a, b = lora
        logits.addmm_(x.float() @ a.T, b.T)
    return logits


# ----------------------------------------------------------------------------- draws

_M32 = 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    # A 32-bit integer hash in int64 arithmetic; every product stays below 2^59 (no overflow).
    x = x ^ (x >> 16)
    x = (x * 0x45D9F3B) & _M32
    x = x ^ (x >> 16)
    x = (x * 0x45D9F3B) & _M32
    return x ^ (x >> 16)


def counter_uniform(keys: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Uniform [0, 1) float32 per row from (63-bit key, draw index): 24 bits, exact in float32."""
    h = _mix32((keys & _M32) ^ _mix32(((keys >> 32) & _M32) ^ _mix32(counts & _M32)))
    return (h >> 8).to(torch.float32) * (1.0 / (1 << 24))


def filter_rows(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Per-row top-k then top-p (the reference's _filter_logits, one row per parameter pair)."""
    vocab = logits.shape[-1]
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    k = torch.where((top_k > 0) & (top_k < vocab), top_k, torch.full_like(top_k, vocab))
    kth = sorted_logits.gather(1, (k - 1)[:, None])
    sorted_logits = sorted_logits.masked_fill(sorted_logits < kth, float("-inf"))
    probs = torch.softmax(sorted_logits, dim=-1)
    drop = ((probs.cumsum(-1) - probs) >= top_p[:, None]) & (top_p < 1.0)[:, None]
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)


def draw_rows(logits, temperature, top_k, top_p, keys, counts, any_filter: bool, any_greedy: bool,
              all_unit_temperature: bool = False):
    """One token and its logprob (under the model's own distribution) per row."""
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    if all_unit_temperature and not any_filter:
        # Every row draws from the model's own distribution (RL's usual case): exp(logits − lse)
        # is that softmax, without a scaled copy of the logits and a second normalisation.
        probs = (logits - lse).exp_()
    else:
        scaled = logits / torch.where(temperature > 0, temperature, torch.ones_like(temperature))[:, None]
        if any_filter:
            scaled = filter_rows(scaled, top_k, top_p)
        probs = torch.softmax(scaled, dim=-1)
    cdf = probs.cumsum_(dim=-1)
    u = counter_uniform(keys, counts)
    chosen = torch.searchsorted(cdf, (u[:, None] * cdf[:, -1:]).contiguous(), right=True)[:, 0]
    chosen = chosen.clamp_(max=logits.shape[-1] - 1)
    if any_greedy:
        chosen = torch.where(temperature > 0, chosen, logits.argmax(dim=-1))
    logprobs = logits.gather(1, chosen[:, None])[:, 0] - lse[:, 0]
    return chosen, logprobs


# ------------------------------------------------------------------------------ jobs


@dataclass
class FastJob:
    """One sample request on the fast path."""

    key: object  # the sampler snapshot's identity (lanes are reused by key)
    base_model: torch.nn.Module
    snapshot: object  # callable() → peft module tree with the snapshot's adapter, or None for the base
    prompt: list
    num_samples: int
    params: SamplingParams
    eos_ids: list
    tokenizer: object
    on_done: object
    on_error: object
    fallback: object  # callable(): run this request on the reference path instead
    tokens: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    pending: int = 0

    def result(self) -> dict:
        return {
            "prompt_logprobs": None,
            "topk_prompt_logprobs": None,
            "sequences": [
                {"tokens": t, "logprobs": lp, "stop_reason": r}
                for t, lp, r in zip(self.tokens, self.logprobs, self.reasons)
            ],
        }


@dataclass
class _Row:
    job: FastJob
    index: int
    stop: StopChecker
    position: int  # cache position the next fed token is written at
    key: int  # the sample's seed: its draws are counter_uniform(key, token index)


def _bucket(n: int, minimum: int = 1) -> int:
    size = minimum
    while size < n:
        size *= 2
    return size


def decode_bucket(n: int, floor: int) -> int:
    """The batch or length a decode step of n rows (or n cache positions) runs at: n rounded up to
    a multiple of an eighth of the power of two above it, and of `floor`; powers of two up to
    `floor`. Four buckets per octave pad a step by at most a quarter (or `floor`) where powers of
    two pad by up to double, and attention reads every padded row's keys up to the padded length:
    a decode step at hundreds of rows is mostly those reads. The price is twice as many CUDA
    graphs, each captured once per lane."""
    if n <= floor:
        return _bucket(n)
    step = max(floor, (1 << (n - 1).bit_length()) >> 3)
    return -(-n // step) * step


def length_bucket(positions: int) -> int:
    """The cache length a decode step attends to when its rows reach `positions` positions."""
    return decode_bucket(max(positions, MIN_LENGTH_BUCKET), MIN_LENGTH_BUCKET)


class _Lane:
    """The rows of one sampler snapshot: their slot cache, per-row state, and CUDA graphs."""

    def __init__(self, base: BaseWeights, signature, use_graphs: bool):
        self.base = base
        self.signature = signature
        self.key = None
        self.lora = None
        self.rows: list = []
        self.slots = 0
        self.length = 0
        self.k = self.v = None  # [layers, slots, kv_heads, length, head_dim]
        self.logits = None  # [slots, vocab] float32: each row's next-token logits
        self.ids = self.positions = None  # [slots] long: inputs of the next decode step
        self.use_graphs = use_graphs
        self.graphs: dict = {}
        self.graph_pool = None
        self.rope = None  # (cos, signed sin) tables this lane's graphs read; held so a base's regrowth frees none
        self._row_state = None

    # -- memory

    def bytes_for(self, slots: int, length: int) -> int:
        b = self.base
        per_token = 2 * len(b.layers) * b.num_kv_heads * b.head_dim * torch.finfo(b.dtype).bits // 8
        return slots * length * per_token + slots * b.vocab * 4

    def ensure(self, slots: int, length: int) -> None:
        """Grows the cache to at least (slots, length); drops the graphs that read the old one."""
        slots, length = max(slots, self.slots), max(length, self.length)
        if slots == self.slots and length == self.length:
            return
        b = self.base
        shape = (len(b.layers), slots, b.num_kv_heads, length, b.head_dim)
        k = torch.zeros(shape, dtype=b.dtype, device=b.device)
        v = torch.zeros(shape, dtype=b.dtype, device=b.device)
        logits = torch.zeros((slots, b.vocab), dtype=torch.float32, device=b.device)
        ids = torch.zeros(slots, dtype=torch.long, device=b.device)
        positions = torch.zeros(slots, dtype=torch.long, device=b.device)
        if self.k is not None:
            n = len(self.rows)
            k[:, :n, :, : self.length] = self.k[:, :n]
            v[:, :n, :, : self.length] = self.v[:, :n]
            logits[:n] = self.logits[:n]
            ids[:n] = self.ids[:n]
            positions[:n] = self.positions[:n]
        self.k, self.v, self.logits, self.ids, self.positions = k, v, logits, ids, positions
        self.slots, self.length = slots, length
        self.rope = b.rope(length)  # built here, never inside a graph capture
        self.graphs.clear()
        self.graph_pool = None

    def release(self) -> None:
        self.k = self.v = self.logits = self.ids = self.positions = self.rope = None
        self.slots = self.length = 0
        self.graphs.clear()
        self.graph_pool = None

    # -- snapshot

    def load(self, key, lora) -> None:
        """Points the lane at a snapshot; adapters are copied into the lane's own tensors so that
        captured graphs keep reading the same memory."""
        self.key = key
        if lora is None:
            self.lora = None
            return
        if self.lora is None:
            self.lora = [[None if p is None else (p[0].clone(), p[1].clone()) for p in groups] for groups in lora]
            return
        for mine, theirs in zip(self.lora, lora):
            for m, t in zip(mine, theirs):
                if m is not None:
                    m[0].copy_(t[0])
                    m[1].copy_(t[1])

    # -- model

    def _layers(self, x, cos, sin, attend):
        base = self.base
        for i, layer in enumerate(base.layers):
            lora = self.lora[i] if self.lora is not None else (None, None, None, None)
            q_g, o_g, gu_g, d_g = layer["groups"]
            h = layer["ln1"](x)
            qkv = _project(h, q_g, lora[0])
            q, k, v = qkv.split(q_g.sizes, dim=-1)
            q = q.view(*q.shape[:-1], base.num_heads, base.head_dim)
            k = k.view(*k.shape[:-1], base.num_kv_heads, base.head_dim)
            v = v.view(*v.shape[:-1], base.num_kv_heads, base.head_dim)
            if layer["q_norm"] is not None:
                q, k = layer["q_norm"](q), layer["k_norm"](k)
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
            a = attend(i, q, k, v, layer["scaling"])
            x = x + _project(a, o_g, lora[1])
            h = layer["ln2"](x)
            gate, up = _project(h, gu_g, lora[2]).split(gu_g.sizes, dim=-1)
            x = x + _project(layer["act"](gate) * up, d_g, lora[3])
        return base.norm(x)

    def _head(self, x):
        return _head_logits(self.base, x, None if self.lora is None else self.lora[-1][0])

    def prefill(self, prompts: list, slots: list) -> None:
        """Right-padded batch of prompts → their caches at `slots`, last logits into self.logits."""
        base = self.base
        width = max(len(p) for p in prompts)
        ids = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, : len(p)] = torch.tensor(p)
        ids = upload(ids, base.device)
        cos, sin = base.rope(width)
        cos, sin = cos[:width, None], sin[:width, None]  # [T, 1, d]: broadcast over heads
        slot_index = upload(torch.tensor(slots, dtype=torch.long), base.device)

        def attend(i, q, k, v, scaling):
            # q [J, T, H, d]; causal attention never reads the right padding of a shorter prompt.
            self.k[i, slot_index, :, :width] = k.transpose(1, 2)
            self.v[i, slot_index, :, :width] = v.transpose(1, 2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling, enable_gqa=True)
            return out.transpose(1, 2).reshape(*q.shape[:1], width, -1)

        hidden = self._layers(base.embed(ids), cos, sin, attend)
        last = upload(torch.tensor([len(p) - 1 for p in prompts]), base.device)
        self.logits[slot_index] = self._head(hidden[torch.arange(len(prompts), device=base.device), last])

    def copy_slot(self, src: int, dst: list) -> None:
        index = upload(torch.tensor(dst, dtype=torch.long), self.base.device)
        self.k[:, index] = self.k[:, src : src + 1].clone()
        self.v[:, index] = self.v[:, src : src + 1].clone()
        self.logits[index] = self.logits[src].clone()

    def _decode(self, batch: int, length: int) -> None:
        """One token for rows [0, batch), attending to cache positions [0, length)."""
        base = self.base
        ids, positions = self.ids[:batch], self.positions[:batch]
        # The lane's own tables: another lane growing the base's tables must not free what a
        # captured graph of this lane reads.
        cos_t, sin_t = self.rope
        cos, sin = cos_t[positions][:, None], sin_t[positions][:, None]  # [B, 1, d]
        # Where this step's keys and values go in a layer's cache, element by element: a row of
        # head_dim offsets per (slot, kv head). Writes are put_ of distinct offsets: deterministic,
        # and one kernel. Under deterministic mode on CUDA, index_copy_ (or an indexed assignment)
        # would first sort its indices in case some repeat, several kernels more per write.
        heads = torch.arange(base.num_kv_heads, device=base.device)
        rows = (torch.arange(batch, device=base.device)[:, None] * base.num_kv_heads + heads) * self.length \
            + positions[:, None]
        write_at = rows.reshape(-1, 1) * base.head_dim + torch.arange(base.head_dim, device=base.device)
        visible = (torch.arange(length, device=base.device)[None] <= positions[:, None])[:, None, None, :]
        groups = base.num_heads // base.num_kv_heads

        def attend(i, q, k, v, scaling):
            self.k[i].put_(write_at, k.reshape(write_at.shape))
            self.v[i].put_(write_at, v.reshape(write_at.shape))
            # The query heads of one kv head are its "query positions": no repeat of the cache.
            q = q.view(batch, base.num_kv_heads, groups, base.head_dim)
            keys, values = self.k[i, :batch, :, :length], self.v[i, :batch, :, :length]
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=visible, scale=scaling)
            return out.reshape(batch, -1)

        hidden = self._layers(base.embed(ids), cos, sin, attend)
        self.logits[:batch] = self._head(hidden)

    def decode(self, n: int, max_position: int) -> None:
        if not self.use_graphs:
            self._decode(n, max_position + 1)
            return
        batch = min(decode_bucket(n, BATCH_STEP), self.slots)
        length = min(length_bucket(max_position + 1), self.length)
        graph = self.graphs.get((batch, length))
        if graph is None:
            try:
                graph = self._capture(batch, length)
            except Exception:  # noqa: BLE001 - decoding eagerly is slower, never wrong
                log.exception("CUDA graph capture failed: decoding without graphs from now on")
                self.stop_graphs()
                self._decode(n, max_position + 1)  # writes what the warm-up wrote, the same values
                return
        graph.replay()

    def stop_graphs(self) -> None:
        self.use_graphs = False
        self.graphs.clear()
        self.graph_pool = None

    def _capture(self, batch: int, length: int):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm-up outside the graph (kernel selection, workspaces)
            self._decode(batch, length)
        torch.cuda.current_stream().wait_stream(stream)
        if self.graph_pool is None:
            self.graph_pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.graph_pool, capture_error_mode="thread_local"):
            self._decode(batch, length)
        self.graphs[(batch, length)] = graph
        return graph

    # -- rows

    def row_state(self):
        """Per-row tensors on the device: sampling parameters, draw counts, and the positions the
        decode step reads. Built and uploaded only when the rows change (without a sync, like every
        upload here); a step in between advances counts and positions on the device."""
        if self._row_state is None:
            device = self.base.device

            def up(values, dtype):
                return upload(torch.tensor(values, dtype=dtype), device)

            params = [r.job.params for r in self.rows]
            self.positions[: len(self.rows)] = up([r.position for r in self.rows], torch.long)
            self._row_state = {
                "temperature": up([p.temperature for p in params], torch.float32),
                "top_k": up([p.top_k for p in params], torch.long),
                "top_p": up([p.top_p for p in params], torch.float32),
                "keys": up([r.key for r in self.rows], torch.long),
                "counts": up([len(r.job.tokens[r.index]) for r in self.rows], torch.long),
                "any_filter": any(0 < p.top_k < self.base.vocab or p.top_p < 1.0 for p in params),
                "any_greedy": any(p.temperature <= 0 for p in params),
                "all_unit_temperature": all(p.temperature == 1.0 for p in params),
            }
        return self._row_state

    def step(self) -> list:
        """Draws one token per row, decodes every row's draw, then retires the rows that stopped.
        Returns the jobs that finished.

        Every row decodes its draw before the host knows which rows just stopped: the device
        decodes while the host records the draws and checks stop conditions, instead of idling
        until the host is done. A stopped row's one extra decode is dropped with its slot."""
        n = len(self.rows)
        state = self.row_state()
        chosen, logprobs = draw_rows(
            self.logits[:n], state["temperature"], state["top_k"], state["top_p"], state["keys"], state["counts"],
            state["any_filter"], state["any_greedy"], state["all_unit_temperature"],
        )
        drawn = start_download(chosen, logprobs)
        self.ids[:n] = chosen
        self.decode(n, max(r.position for r in self.rows))
        self.positions[:n] += 1
        state["counts"] += 1
        for r in self.rows:
            r.position += 1
        keep, finished = record_draws(self.rows, *drawn())
        if len(keep) < n:
            self._compact(keep)
        return finished

    def _compact(self, keep: list) -> None:
        """Moves the rows that go on down over the retired ones: cache, next-token logits."""
        n = len(self.rows)
        self.rows = [self.rows[i] for i in keep]
        self._row_state = None
        moves = [(i, src) for i, src in enumerate(keep) if src != i]
        if moves:
            dst = upload(torch.tensor([m[0] for m in moves], dtype=torch.long), self.base.device)
            src = upload(torch.tensor([m[1] for m in moves], dtype=torch.long), self.base.device)
            used = max(self.rows[i].position for i, _ in moves)
            self.k[:, dst, :, :used] = self.k[:, src, :, :used]
            self.v[:, dst, :, :used] = self.v[:, src, :, :used]
            self.logits[dst] = self.logits[src]
        # Rows past the live ones feed padding into a captured batch: keep them harmless.
        self.ids[len(keep) : n] = 0
        self.positions[len(keep) : n] = 0


class FastSampler:
    """Lanes (one per active sampler snapshot) on the sampling thread; used on that thread only."""

    def __init__(self, device, cache_bytes: int, max_slots: int = 512):
        self.device = torch.device(device)
        self.cache_bytes = cache_bytes
        self.max_slots = max_slots
        self.use_graphs = self.device.type == "cuda"
        self.bases: dict = {}
        self.lanes: list = []  # active lanes
        self.idle: list = []
        self.waiting: list = []  # jobs admitted to no lane yet (cache full)

    def __bool__(self) -> bool:
        return bool(self.lanes) or bool(self.waiting)

    def _base(self, model) -> BaseWeights:
        base = self.bases.get(id(model))
        if base is None:
            base = self.bases[id(model)] = BaseWeights(model)
        return base

    def _used_bytes(self, exclude=None) -> int:
        return sum(l.bytes_for(l.slots, l.length) for l in self.lanes + self.idle if l is not exclude)

    @torch.no_grad()
    def admit(self, jobs: list) -> None:
        """Prefills jobs into their snapshots' lanes (on the sampling thread)."""
        by_lane: dict = {}
        for job in jobs:
            try:
                if job.params.max_tokens == 0:
                    job.tokens, job.logprobs, job.reasons = [[] for _ in range(job.num_samples)], [
                        [] for _ in range(job.num_samples)], ["length"] * job.num_samples
                    job.on_done(job.result())
                    continue
                lane = self._lane_for(job)
                if lane is None:
                    continue
                by_lane.setdefault(id(lane), (lane, []))[1].append(job)
            except Exception as e:
                job.on_error(e)
        for lane, lane_jobs in by_lane.values():
            self._prefill(lane, lane_jobs)

    def _lane_for(self, job: FastJob):
        for lane in self.lanes:
            if lane.key == job.key:
                return lane
        for lane in self.idle:
            if lane.key == job.key:
                self.idle.remove(lane)
                self.lanes.append(lane)
                return lane
        base = self._base(job.base_model)
        snapshot = job.snapshot() if job.snapshot is not None else None
        lora = base.lora_of(snapshot) if snapshot is not None else None
        if lora is not None and base.device.type == "cuda":
            torch.cuda.current_stream(base.device).synchronize()  # adapters written on another thread's stream
        signature = None if lora is None else tuple(
            None if p is None else (tuple(p[0].shape), tuple(p[1].shape)) for groups in lora for p in groups
        )
        for lane in list(self.idle):
            if lane.base is base and lane.signature == signature:
                self.idle.remove(lane)
                lane.load(job.key, lora)
                self.lanes.append(lane)
                return lane
        lane = _Lane(base, signature, self.use_graphs)
        lane.load(job.key, lora)
        self.lanes.append(lane)
        return lane

    def _prefill(self, lane: _Lane, jobs: list) -> None:
        admitted = []
        for job in jobs:
            n = len(lane.rows) + sum(j.num_samples for j in admitted)
            need = len(job.prompt) + job.params.max_tokens
            busy = any(l.rows for l in self.lanes) or bool(admitted)
            if n and n + job.num_samples > self.max_slots:
                self.waiting.append(job)  # rows will retire and make room
                continue
            slots = max(_bucket(n + job.num_samples, 8), lane.slots)
            length = max(_bucket(need, MIN_LENGTH_BUCKET), lane.length)
            while lane.bytes_for(slots, length) + self._used_bytes(exclude=lane) > self.cache_bytes and self.idle:
                self.idle.pop().release()
            if lane.bytes_for(slots, length) + self._used_bytes(exclude=lane) > self.cache_bytes:
                if busy:
                    self.waiting.append(job)  # rows will retire and make room
                else:
                    log.warning("sample request needs more KV cache than --kv-cache-gb allows; "
                                "running it on the reference path")
                    job.fallback()
                continue
            lane.ensure(slots, length)
            admitted.append(job)
        if not admitted:
            self._retire_if_empty(lane)
            return
        start = len(lane.rows)
        firsts = []
        for job in admitted:
            firsts.append(start)
            start += job.num_samples
        chunk, chunk_slots, tokens = [], [], 0
        for job, first in zip(admitted, firsts):
            width = max([len(j.prompt) for j in chunk] + [len(job.prompt)])
            if chunk and width * (len(chunk) + 1) > PREFILL_TOKENS:
                lane.prefill([j.prompt for j in chunk], chunk_slots)
                chunk, chunk_slots = [], []
            chunk.append(job)
            chunk_slots.append(first)
        if chunk:
            lane.prefill([j.prompt for j in chunk], chunk_slots)
        for job, first in zip(admitted, firsts):
            if job.num_samples > 1:
                lane.copy_slot(first, list(range(first + 1, first + job.num_samples)))
            n = job.num_samples
            job.tokens, job.logprobs, job.reasons, job.pending = [[] for _ in range(n)], [[] for _ in range(n)], [
                "length"] * n, n
            stop = StopChecker(job.params, job.eos_ids, job.tokenizer)
            for i in range(n):
                lane.rows.append(_Row(job, i, stop, len(job.prompt), sample_seed(job.params.seed, i)))
        lane._row_state = None

    def _retire_if_empty(self, lane: _Lane) -> None:
        if not lane.rows and lane in self.lanes:
            self.lanes.remove(lane)
            self.idle.insert(0, lane)
            while len(self.idle) > MAX_IDLE_LANES:
                self.idle.pop().release()

    def submit(self, job: FastJob) -> None:
        """Queues a job; jobs queued between two steps are prefilled together."""
        self.waiting.append(job)

    @torch.no_grad()
    def step(self) -> None:
        if self.waiting:
            jobs, self.waiting = self.waiting, []
            self.admit(jobs)
        for lane in list(self.lanes):
            if not lane.rows:
                self._retire_if_empty(lane)
                continue
            try:
                finished = lane.step()
                if not lane.use_graphs and self.use_graphs:  # capture failed: no new lane tries again
                    self.use_graphs = False
                    for other in self.lanes + self.idle:
                        other.stop_graphs()
            except Exception as e:  # fail the lane's requests, keep serving
                log.exception("fast decode step failed")
                for job in {id(r.job): r.job for r in lane.rows}.values():
                    job.on_error(e)
                lane.rows = []
                lane.release()
                self.lanes.remove(lane)
                continue
            for job in finished:
                job.on_done(job.result())
            self._retire_if_empty(lane)

    def fail_all(self, exc: BaseException) -> None:
        for lane in self.lanes:
            for job in {id(r.job): r.job for r in lane.rows}.values():
                job.on_error(exc)
            lane.rows = []
        for job in self.waiting:
            job.on_error(exc)
        self.waiting = []
