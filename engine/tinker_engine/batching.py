"""Continuous batching for sampling (opt-in: `--continuous-batching`).

Sample requests join a shared decode batch at step boundaries and leave it row by row as their
samples stop, as in a serving engine: a decode step costs nearly the same for one row as for
thirty, so a batch kept full by concurrent requests turns the long tail of one request into room
for the next. Rows of one sampler model (base, or base + one adapter) decode together; rows of
different models decode in separate batches of the same step.

Rows of different lengths share one KV cache by left padding: a 2-D attention mask hides the
padding, and each row carries its own position ids. Each sample keeps its own seeded generator,
so its draws do not depend on the other rows — but its logits do, in the last float bits (matrix
kernels are not batch-invariant), so batched sampling is not bitwise reproducible across runs
whose batches were composed differently. That is why it is off by default: the durable runs'
equal-after-a-crash guarantee rests on reproducible sampling.
"""

import logging
from dataclasses import dataclass, field

import torch

from .head import HeadProjection
from .sampler import SamplingParams, StopChecker, _draw, _unwrap, record_draws, seeded_generators

log = logging.getLogger("tinker_engine")


@dataclass
class DecodeJob:
    """One sample request: num_samples rows that decode until each stops."""

    model: torch.nn.Module
    prompt: list
    num_samples: int
    params: SamplingParams
    eos_ids: list
    tokenizer: object
    on_done: object  # callable(result: dict)
    on_error: object  # callable(exc: BaseException)
    tokens: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    pending: int = 0


@dataclass
class _Row:
    job: DecodeJob
    index: int
    generator: torch.Generator
    stop: StopChecker
    position: int  # position id of the next token fed to the model


def batchable(model) -> bool:
    """Whether the model's KV cache is plain (no sliding-window or linear-attention layers)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=_unwrap(model).config)
    return all(type(layer) is DynamicLayer for layer in cache.layers)


class _Batch:
    """The rows of one sampler model, their shared KV cache and the logits of their next draw."""

    def __init__(self, model, device):
        hf = _unwrap(model)
        self.model = model  # keeps id(model), the pool's key, from being reused while rows decode
        self.config = hf.config
        self.body = hf.get_decoder()
        self.proj = HeadProjection(hf.get_output_embeddings())
        self.device = device
        self.rows: list = []
        self.cache = None  # set by the first admission
        self.mask = None
        self.logits = None

    def admit(self, job: DecodeJob) -> None:
        from transformers import DynamicCache

        ids = torch.tensor([job.prompt], dtype=torch.long, device=self.device)
        cache = DynamicCache(config=self.config)
        hidden = self.body(input_ids=ids, past_key_values=cache, use_cache=True).last_hidden_state[0]
        n = job.num_samples
        logits = self.proj.logits(hidden[-1:]).expand(n, -1)
        if n > 1:
            cache.batch_repeat_interleave(n)
        length = len(job.prompt)
        self._merge(cache, torch.ones((n, length), dtype=torch.long, device=self.device))
        self.logits = logits if self.logits is None else torch.cat([self.logits, logits])
        job.tokens = [[] for _ in range(n)]
        job.logprobs = [[] for _ in range(n)]
        job.reasons = ["length"] * n
        job.pending = n
        stop = StopChecker(job.params, job.eos_ids, job.tokenizer)
        for i, g in enumerate(seeded_generators(job.params.seed, n, self.device)):
            self.rows.append(_Row(job, i, g, stop, length))

    def _merge(self, cache, mask) -> None:
        """Appends rows with their own cache, left-padding whichever side is shorter."""
        if not self.rows:
            self.cache, self.mask = cache, mask
            return
        old, new = self.mask.shape[1], mask.shape[1]
        width = max(old, new)
        for mine, theirs in zip(self.cache.layers, cache.layers):
            mine.keys = torch.cat([_pad_left(mine.keys, width), _pad_left(theirs.keys, width)])
            mine.values = torch.cat([_pad_left(mine.values, width), _pad_left(theirs.values, width)])
        self.mask = torch.cat([_pad_left(self.mask, width, dim=1), _pad_left(mask, width, dim=1)])

    def step(self) -> list:
        """Draws one token per row, retires stopped rows and runs the model on the rest.
        Returns the jobs that finished."""
        logits = self.logits
        chosen = torch.empty(len(self.rows), dtype=torch.long, device=self.device)
        # One draw per run of rows that share temperature, top-k and top-p (usually all of them).
        start = 0
        while start < len(self.rows):
            params = self.rows[start].job.params
            end = start + 1
            while end < len(self.rows) and _same_distribution(self.rows[end].job.params, params):
                end += 1
            chosen[start:end] = _draw(logits[start:end], params, [r.generator for r in self.rows[start:end]])
            start = end
        chosen_lp = logits.gather(1, chosen[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        keep, finished = record_draws(self.rows, chosen.cpu().tolist(), chosen_lp.cpu().tolist())
        if len(keep) < len(self.rows):
            self._select(keep)
        if self.rows:
            self._decode(chosen[keep] if len(keep) < len(chosen) else chosen)
        return finished

    def _select(self, keep: list) -> None:
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        self.rows = [self.rows[k] for k in keep]
        if not self.rows:
            self.logits = None
            return
        mask = self.mask.index_select(0, index)
        # Columns that only the retired rows used are padding for everyone left.
        first = int(mask.any(dim=0).nonzero()[0])
        self.mask = mask[:, first:]
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(0, index)[:, :, first:]
            layer.values = layer.values.index_select(0, index)[:, :, first:]

    def _decode(self, chosen: torch.Tensor) -> None:
        width = self.mask.shape[1]
        self.mask = torch.cat([self.mask, torch.ones((len(self.rows), 1), dtype=torch.long, device=self.device)], dim=1)
        positions = torch.tensor([[r.position] for r in self.rows], dtype=torch.long, device=self.device)
        for r in self.rows:
            r.position += 1
        hidden = self.body(
            input_ids=chosen[:, None],
            attention_mask=self.mask,
            position_ids=positions,
            cache_position=torch.tensor([width], dtype=torch.long, device=self.device),
            past_key_values=self.cache,
            use_cache=True,
        ).last_hidden_state
        self.logits = self.proj.logits(hidden[:, -1])


def _same_distribution(a: SamplingParams, b: SamplingParams) -> bool:
    return (a.temperature, a.top_k, a.top_p) == (b.temperature, b.top_k, b.top_p)


def _pad_left(t: torch.Tensor, width: int, dim: int = -2) -> torch.Tensor:
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=dim)


class DecodePool:
    """The compute thread's decode batches, one per sampler model (used on that thread only)."""

    def __init__(self, device):
        self.device = device
        self.batches: dict = {}

    def __bool__(self) -> bool:
        return bool(self.batches)

    def accepts(self, model) -> bool:
        """Whether `model` can decode here (checked once per batch, not per request)."""
        return id(model) in self.batches or batchable(model)

    @torch.no_grad()
    def admit(self, job: DecodeJob) -> None:
        batch = self.batches.get(id(job.model))
        fresh = batch is None
        if fresh:
            batch = _Batch(job.model, self.device)
        try:
            batch.admit(job)
        except Exception as e:  # a failed prefill fails its request only
            job.on_error(e)
            return
        if fresh:
            self.batches[id(job.model)] = batch

    @torch.no_grad()
    def step(self) -> None:
        for key, batch in list(self.batches.items()):
            try:
                finished = batch.step()
            except Exception as e:  # fail the batch's requests, keep serving
                log.exception("decode step failed")
                for job in {id(r.job): r.job for r in batch.rows}.values():
                    job.on_error(e)
                del self.batches[key]
                continue
            for job in finished:
                job.on_done({
                    "prompt_logprobs": None,
                    "topk_prompt_logprobs": None,
                    "sequences": [
                        {"tokens": t, "logprobs": lp, "stop_reason": r}
                        for t, lp, r in zip(job.tokens, job.logprobs, job.reasons)
                    ],
                })
            if not batch.rows:
                del self.batches[key]

    def fail_all(self, exc: BaseException) -> None:
        for batch in self.batches.values():
            for job in {id(r.job): r.job for r in batch.rows}.values():
                job.on_error(exc)
        self.batches.clear()
