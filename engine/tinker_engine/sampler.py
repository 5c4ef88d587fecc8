"""Autoregressive sampling with a KV cache, per-sample seeded generators and stop handling."""

import hashlib
import secrets
from dataclasses import dataclass, field

import torch

from .head import CHUNK_ELEMENTS, HeadProjection
from .images import decode_positions, decoder_inputs, image_positions
from .prompt_scoring import ScoringOptions, alt_tokens, target_logprobs, topk_rows

# Token logprobs are those of the model's own distribution (temperature 1, no top-k/p), so they
# agree with what forward() reports for the same tokens and can serve as importance weights.


@dataclass
class SamplingParams:
    max_tokens: int = 128
    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0
    seed: int | None = None
    stop_strings: list = field(default_factory=list)
    stop_tokens: list = field(default_factory=list)
    stop_at_eos: bool = True  # SDK 0.38: `stop: []` disables every stop token, EOS included


def sample_seed(seed: int | None, index: int) -> int:
    """The generator seed of sample `index`: a pure function of (request seed, index)."""
    if seed is None:
        return secrets.randbits(63)
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def seeded_generators(seed: int | None, n: int, device) -> list:
    """One generator per sample of a request, seeded by (request seed, sample index)."""
    generators = []
    for i in range(n):
        g = torch.Generator(device=device)
        g.manual_seed(sample_seed(seed, i))
        generators.append(g)
    return generators


def _filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Keep the smallest prefix whose mass reaches top_p (the first token always stays).
        drop = (probs.cumsum(-1) - probs) >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return logits


class StopChecker:
    def __init__(self, params: SamplingParams, eos_ids: list, tokenizer):
        self.stop_ids = set(eos_ids) | set(params.stop_tokens)
        self.stop_strings = [s for s in params.stop_strings if s]
        self.tokenizer = tokenizer
        # A stop string of L characters spans at most ~4L byte-level tokens.
        self.window = 4 * max((len(s) for s in self.stop_strings), default=0) + 4

    def stops(self, generated: list) -> bool:
        if generated[-1] in self.stop_ids:
            return True
        if not self.stop_strings or self.tokenizer is None:
            return False
        text = self.tokenizer.decode(generated[-self.window :], skip_special_tokens=False)
        return any(s in text for s in self.stop_strings)


def can_repeat_rows(cache) -> bool:
    """Whether every layer of a transformers cache can repeat its batch rows (linear-attention layers
    of hybrid models cannot)."""
    return all(hasattr(layer, "batch_repeat_interleave") for layer in cache.layers)


def _unwrap(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _draw(logits: torch.Tensor, params: SamplingParams, generators: list) -> torch.Tensor:
    """One token per row. Inverse-CDF sampling needs a single uniform draw per row and step
    (cheaper than torch.multinomial's one exponential per vocabulary entry)."""
    if params.temperature <= 0:
        return logits.argmax(dim=-1)
    scaled = logits if params.temperature == 1.0 else logits / params.temperature
    if (0 < params.top_k < logits.shape[-1]) or params.top_p < 1.0:
        scaled = _filter_logits(scaled, params.top_k, params.top_p)
    cdf = torch.softmax(scaled, dim=-1).cumsum_(dim=-1)
    u = torch.cat([torch.rand(1, generator=g, device=logits.device) for g in generators]).unsqueeze(1)
    chosen = torch.searchsorted(cdf, u * cdf[:, -1:], right=True)[:, 0]
    return chosen.clamp_(max=logits.shape[-1] - 1)


@torch.no_grad()
def generate(model, prompt: list, num_samples: int, params: SamplingParams, eos_ids: list, tokenizer,
             device, prompt_logprobs: bool = False, topk_prompt: int = 0, extra: ScoringOptions | None = None,
             images: list | tuple = ()) -> dict:
    """`images`: the prompt's images (images.PlacedImage) on a vision-language model; their
    positions get null prompt logprobs (a logprob of the placeholder token means nothing)."""
    from transformers import DynamicCache

    extra = extra or ScoringOptions()

    hf = _unwrap(model)
    body, proj = hf.get_decoder(), HeadProjection(hf.get_output_embeddings())
    ids = torch.tensor([prompt], dtype=torch.long, device=device)
    cache = DynamicCache(config=hf.config)
    # A cache that cannot repeat its rows (linear-attention layers) is filled once per sample.
    rows = 1 if can_repeat_rows(cache) else num_samples
    delta = 0  # M-RoPE: how far text positions after the prompt's images are shifted
    if images:
        kwargs, deltas = decoder_inputs(hf, ids.expand(rows, -1), [list(images)] * rows, device)
        delta = int(deltas[0, 0])
        hidden = body(**kwargs, past_key_values=cache, use_cache=True).last_hidden_state[0]
    else:
        hidden = body(input_ids=ids.expand(rows, -1), past_key_values=cache, use_cache=True).last_hidden_state[0]
    blank = image_positions(images)
    result = {"prompt_logprobs": None, "topk_prompt_logprobs": None}
    if prompt_logprobs:
        # Same computation as training's forward, so the two agree to float rounding.
        chosen = proj.target_logprobs(hidden[:-1], ids[0, 1:, None])[:, 0]
        result["prompt_logprobs"] = [None] + [None if i + 1 in blank else v for i, v in enumerate(chosen.cpu().tolist())]
    if topk_prompt > 0:
        top = [None]
        step = max(1, CHUNK_ELEMENTS // proj_vocab(proj, hidden))
        for i in range(0, len(prompt) - 1, step):
            logits = proj.logits(hidden[i : min(i + step, len(prompt) - 1)])
            lp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
            values, indices = torch.topk(lp, min(topk_prompt, lp.shape[-1]), dim=-1)
            for tok_row, lp_row in zip(indices.cpu().tolist(), values.cpu().tolist()):
                top.append(None if len(top) in blank else [[t, v] for t, v in zip(tok_row, lp_row)])
        result["topk_prompt_logprobs"] = top
    if extra.target is not None:
        result["target_prompt_logprobs"] = target_logprobs(proj, hidden, extra.target)
    if extra.alt_k > 0:
        result["prompt_alt_tokens"] = alt_tokens(proj, hidden, extra.alt_k, params.temperature, params.seed)
    logits = proj.logits(hidden[-1:]).expand(num_samples, -1)
    if num_samples > 1 and rows == 1:
        cache.batch_repeat_interleave(num_samples)
    generators = seeded_generators(params.seed, num_samples, device)
    stop = StopChecker(params, eos_ids, tokenizer)
    tokens = [[] for _ in range(num_samples)]
    logprobs = [[] for _ in range(num_samples)]
    topk = [[] for _ in range(num_samples)]
    reasons = ["length"] * num_samples
    active = list(range(num_samples))
    for step in range(params.max_tokens):
        chosen = _draw(logits, params, generators)
        chosen_lp = logits.gather(1, chosen[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        chosen_list, lp_list = chosen.cpu().tolist(), chosen_lp.cpu().tolist()
        topk_step = topk_rows(logits, extra.topk_sample) if extra.topk_sample > 0 else None
        still = []
        for i in active:
            tokens[i].append(chosen_list[i])
            logprobs[i].append(lp_list[i])
            if topk_step is not None:
                topk[i].append(topk_step[i])
            if stop.stops(tokens[i]):
                reasons[i] = "stop"
            else:
                still.append(i)
        active = still
        if not active or step == params.max_tokens - 1:
            break
        # Finished rows keep decoding (cheaper than reshaping the cache) but their output is ignored.
        positions = None if delta == 0 else decode_positions(len(prompt) + step, delta, num_samples, device)
        hidden = body(input_ids=chosen[:, None], position_ids=positions, past_key_values=cache,
                      use_cache=True).last_hidden_state
        logits = proj.logits(hidden[:, -1])
    result["sequences"] = [
        {"tokens": tokens[i], "logprobs": logprobs[i], "stop_reason": reasons[i]} for i in range(num_samples)
    ]
    if extra.topk_sample > 0:
        for seq, seq_topk in zip(result["sequences"], topk):
            seq["topk_logprobs"] = seq_topk
    return result


def proj_vocab(proj: HeadProjection, hidden: torch.Tensor) -> int:
    return proj.vocab if proj.vocab is not None else proj.logits(hidden[:1]).shape[-1]


def record_draws(rows: list, chosen: list, logprobs: list) -> tuple[list, list]:
    """Appends one drawn token (and its logprob) to each decoding row's sample; returns the indices
    of the rows that go on decoding and the jobs whose last sample just stopped. A row has `job`,
    `index` (its sample in the job) and `stop` (a StopChecker); a job has per-sample `tokens`,
    `logprobs` and `reasons`, its `params` and a `pending` count of unfinished samples."""
    keep, finished = [], []
    for i, row in enumerate(rows):
        job = row.job
        tokens = job.tokens[row.index]
        tokens.append(chosen[i])
        job.logprobs[row.index].append(logprobs[i])
        if row.stop.stops(tokens):
            job.reasons[row.index] = "stop"
        elif len(tokens) < job.params.max_tokens:
            keep.append(i)
            continue
        job.pending -= 1
        if job.pending == 0:
            finished.append(job)
    return keep, finished
