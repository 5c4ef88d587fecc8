"""SDK 0.38's extra scoring options of `asample`: top-k logprobs of the sampled tokens
(`topk_sample_logprobs`), logprobs of caller-named tokens at prompt positions
(`target_prompt_logprobs`) and alternative prompt tokens drawn from the model
(`prompt_alt_tokens_k`).

Every logprob here is the model's own (temperature 1, no top-k/p), like `prompt_logprobs` and the
sampled tokens' logprobs, so all of them agree with what forward() reports for the same tokens.
"""

import hashlib
import secrets
from dataclasses import dataclass

import numpy as np
import torch

from .body import Body
from .errors import bad_request
from .head import CHUNK_ELEMENTS, HeadProjection
from .wire import _densify_csr as densify_csr, parse_tensor_json

# What a top-k width may be (per position), and so also how many alternatives or distinct target
# ids a request may ask for at every prompt position: the SDK says the server bounds these alike.
MAX_WIDTH = 1000


@dataclass
class TargetIds:
    ids: np.ndarray  # int64 [len(prompt) - 1, K]; -1 requests nothing
    crow: list | None = None  # the request's CSR layout, echoed in the reply
    col: list | None = None

    def fingerprint(self) -> list:
        return [self.ids.tolist(), self.crow, self.col]


@dataclass
class ScoringOptions:
    topk_sample: int = 0
    alt_k: int = 0
    target: TargetIds | None = None

    @property
    def any(self) -> bool:
        return self.topk_sample > 0 or self.alt_k > 0 or self.target is not None

    def fingerprint(self) -> dict:
        """Only the options a request used, so that requests without them keep their fingerprints."""
        out = {}
        if self.topk_sample:
            out["topk_sample_logprobs"] = self.topk_sample
        if self.alt_k:
            out["prompt_alt_tokens_k"] = self.alt_k
        if self.target is not None:
            out["target_prompt_logprobs"] = self.target.fingerprint()
        return out


def parse_scoring_options(body: Body, prompt_len: int, vocab: int) -> ScoringOptions:
    opts = ScoringOptions(
        topk_sample=_width(body, "topk_sample_logprobs"),
        alt_k=_width(body, "prompt_alt_tokens_k"),
    )
    if opts.alt_k and prompt_len < 2:
        raise bad_request("prompt_alt_tokens_k needs a prompt of at least 2 tokens (position 0 has no context)")
    raw = body.raw("target_prompt_logprobs", None)
    if raw is not None:
        opts.target = parse_target_ids(raw, prompt_len, vocab)
    return opts


def _width(body: Body, name: str) -> int:
    value = body.int(name, 0)
    if not 0 <= value <= MAX_WIDTH:
        raise bad_request(f"{name} must be between 0 and {MAX_WIDTH}, got {value}")
    return value


def parse_target_ids(raw, prompt_len: int, vocab: int) -> TargetIds:
    where = "target_prompt_logprobs"
    b = Body(raw, where)
    if b.str("dtype", "int64") != "int64":
        raise bad_request(f"{where}.dtype must be 'int64' (token ids)")
    shape = b.raw("shape")
    if not isinstance(shape, list) or len(shape) != 2:
        raise bad_request(f"{where}.shape must be [len(prompt) - 1, K], got {shape!r}")
    if shape[0] != prompt_len - 1:
        raise bad_request(f"{where} has {shape[0]} rows; the prompt of {prompt_len} tokens needs {prompt_len - 1}")
    sparse = b.has("sparse_crow_indices") or b.has("sparse_col_indices")
    if sparse:
        # Cells a sparse request leaves out request nothing (-1), not token 0: densify the ids
        # shifted by one, so that the zero fill becomes -1 once shifted back.
        values = parse_tensor_json({"data": b.list("data"), "dtype": "int64"}, where)
        ids = densify_csr(values + 1, b.list("sparse_crow_indices"), b.list("sparse_col_indices"), shape, where) - 1
    else:
        ids = parse_tensor_json(raw, where)
    if ids.size and (ids.min() < -1 or ids.max() >= vocab):
        raise bad_request(f"{where} contains ids outside the vocabulary [0, {vocab}) (and -1 for none)")
    named = ids[ids >= 0]
    if named.size == 0:
        raise bad_request(f"{where} names no token id (every cell is -1)")
    distinct = int(np.unique(named).size)
    if distinct > MAX_WIDTH:
        raise bad_request(f"{where} names {distinct} distinct ids, more than {MAX_WIDTH}")
    if sparse:
        return TargetIds(ids, [int(x) for x in b.list("sparse_crow_indices")], [int(x) for x in b.list("sparse_col_indices")])
    return TargetIds(ids)


def _rows_per_chunk(proj: HeadProjection, hidden: torch.Tensor) -> int:
    vocab = proj.vocab if proj.vocab is not None else proj.logits(hidden[:1]).shape[-1]
    return max(1, CHUNK_ELEMENTS // vocab)


def target_logprobs(proj: HeadProjection, hidden: torch.Tensor, target: TargetIds) -> dict:
    """hidden: the prompt's hidden states [len(prompt), H]. Row i scores prompt position i + 1, so
    it reads the hidden state of position i. A float32 tensor in the request's layout, 0.0 at -1."""
    ids = torch.as_tensor(target.ids, device=hidden.device)
    wanted = ids >= 0
    values = proj.target_logprobs(hidden[:-1], ids.clamp(min=0)).float().masked_fill(~wanted, 0.0)
    dense = values.cpu().numpy().astype(np.float32)
    shape = list(target.ids.shape)
    if target.crow is None:
        return {"data": dense.reshape(-1).tolist(), "shape": shape, "crow": None, "col": None}
    row_of = np.repeat(np.arange(shape[0]), np.diff(np.asarray(target.crow, dtype=np.int64)))
    data = dense[row_of, np.asarray(target.col, dtype=np.int64)] if len(target.col) else np.zeros(0, np.float32)
    return {"data": data.tolist(), "shape": shape, "crow": target.crow, "col": target.col}


def alt_generator(seed: int | None, device) -> torch.Generator:
    """The draws' own stream, a pure function of the request seed (apart from the samples')."""
    g = torch.Generator(device=device)
    if seed is None:
        g.manual_seed(secrets.randbits(63))
    else:
        digest = hashlib.sha256(f"{seed}:prompt_alt_tokens".encode()).digest()
        g.manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
    return g


def alt_tokens(proj: HeadProjection, hidden: torch.Tensor, k: int, temperature: float, seed: int | None) -> dict:
    """k draws with replacement at every prompt position after the first, from the next-token
    distribution at the request's temperature (temperature 0: the argmax, k times); each with the
    model's logprob of it. Rows [len(prompt) - 1, k]."""
    generator = alt_generator(seed, hidden.device)
    tokens, logprobs = [], []
    step = _rows_per_chunk(proj, hidden)
    for i in range(0, hidden.shape[0] - 1, step):
        logits = proj.logits(hidden[i : min(i + step, hidden.shape[0] - 1)]).float()
        lp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        if temperature <= 0:
            drawn = logits.argmax(dim=-1, keepdim=True).expand(-1, k)
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            drawn = torch.multinomial(probs, k, replacement=True, generator=generator)
        tokens.extend(drawn.cpu().tolist())
        logprobs.extend(lp.gather(1, drawn).cpu().tolist())
    return {"tokens": tokens, "logprobs": logprobs}


def topk_rows(logits: torch.Tensor, k: int) -> list:
    """[[token, logprob], …] of the k likeliest tokens, per row of `logits` [R, V]."""
    lp = logits.float() - torch.logsumexp(logits.float(), dim=-1, keepdim=True)
    values, indices = torch.topk(lp, min(k, lp.shape[-1]), dim=-1)
    return [[[t, v] for t, v in zip(tr, vr)] for tr, vr in zip(indices.cpu().tolist(), values.cpu().tolist())]
