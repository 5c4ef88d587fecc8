"""Submit-time validation of forward/forward_backward requests, so that a bad request is answered
with a 4xx naming the problem and never reaches a model's gradients."""

import numpy as np

from .base_models import BaseModelSpec
from .errors import bad_request
from .losses import LOSS_INPUTS, LOSSES, resolve_config
from .wire import ForwardRequest

# Losses of the Tinker SDK (0.38) that this engine does not implement: refused by name, never
# silently replaced by another loss.
UNSERVED_LOSSES = ("stable_reinforce", "custom")
_KNOWN_INPUTS = set().union(*(req | opt for req, opt in LOSS_INPUTS.values()))
_FLOAT_INPUTS = _KNOWN_INPUTS - {"target_tokens"}


def validate_forward(req: ForwardRequest, spec: BaseModelSpec, max_datums: int = 1 << 16) -> None:
    if req.loss_fn in UNSERVED_LOSSES:
        raise bad_request(f"loss_fn {req.loss_fn!r} is not served by this engine; it serves {', '.join(LOSSES)}")
    if req.loss_fn not in LOSSES:
        raise bad_request(f"unknown loss_fn {req.loss_fn!r}; expected one of {', '.join(LOSSES)}")
    try:
        req.loss_fn_config = resolve_config(req.loss_fn, req.loss_fn_config)
    except KeyError as e:
        raise bad_request(f"unknown loss_fn_config key {e.args[0]!r} for loss_fn {req.loss_fn!r}") from None
    if not req.data:
        raise bad_request("data must contain at least one datum")
    if len(req.data) > max_datums:
        raise bad_request(f"too many datums in one request ({len(req.data)} > {max_datums})")
    required, _ = LOSS_INPUTS[req.loss_fn]
    for i, datum in enumerate(req.data):
        where = f"data[{i}]"
        n = len(datum.tokens)
        if n == 0:
            raise bad_request(f"{where}.model_input is empty")
        if n > spec.max_context:
            raise bad_request(f"{where}.model_input has {n} tokens, more than the model's context {spec.max_context}")
        _check_token_range(datum.tokens, spec.vocab_size, f"{where}.model_input")
        for key in sorted(required):
            if key not in datum.inputs:
                raise bad_request(f"{where}.loss_fn_inputs is missing {key!r} required by loss_fn {req.loss_fn!r}")
        for key, arr in list(datum.inputs.items()):
            kw = f"{where}.loss_fn_inputs.{key}"
            if key not in _KNOWN_INPUTS:
                raise bad_request(f"{kw}: unknown loss input; known inputs are {', '.join(sorted(_KNOWN_INPUTS))}")
            if arr.ndim == 0 or arr.shape[0] != n:
                raise bad_request(
                    f"{kw} has shape {list(arr.shape)} but model_input has {n} tokens (expected first dimension {n})"
                )
            if key in _FLOAT_INPUTS:
                arr = arr.astype(np.float32)
                datum.inputs[key] = arr
                if not np.all(np.isfinite(arr)):
                    raise bad_request(f"{kw} contains NaN or infinite values")
        if req.loss_fn == "gspo" and not np.any(datum.inputs["sequence_ratio_mask"]) and np.any(datum.inputs["advantages"]):
            raise bad_request(f"{where}.loss_fn_inputs.sequence_ratio_mask marks no token, so gspo has no sequence ratio for its advantages")
        targets = datum.inputs["target_tokens"]
        if not np.issubdtype(targets.dtype, np.integer):
            raise bad_request(f"{where}.loss_fn_inputs.target_tokens must have dtype int64")
        _check_token_range(targets, spec.vocab_size, f"{where}.loss_fn_inputs.target_tokens")
        if targets.ndim > 2 or (targets.ndim == 2 and req.loss_fn != "cross_entropy"):
            raise bad_request(f"{where}.loss_fn_inputs.target_tokens must have shape [{n}]")
        for key, arr in datum.inputs.items():
            if key != "target_tokens" and arr.shape != targets.shape:
                raise bad_request(
                    f"{where}.loss_fn_inputs.{key} has shape {list(arr.shape)}, target_tokens has {list(targets.shape)}"
                )


def _check_token_range(tokens: np.ndarray, vocab_size: int, where: str) -> None:
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        bad = int(tokens.max()) if tokens.max() >= vocab_size else int(tokens.min())
        raise bad_request(f"{where} contains token id {bad} outside the vocabulary [0, {vocab_size})")
