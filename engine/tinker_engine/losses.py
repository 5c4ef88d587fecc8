"""Tinker's server-side losses (protocol §9). Every loss is a sum over tokens and datums.

Each loss receives, for one datum, `logprobs` = log p_θ(target_tokens[i] | prefix) (a tensor that
carries gradients) and the datum's loss_fn_inputs as tensors, and returns the datum's loss.
"""

import torch

LOSS_INPUTS = {
    "cross_entropy": ({"target_tokens"}, {"weights"}),
    "importance_sampling": ({"target_tokens", "logprobs", "advantages"}, set()),
    "ppo": ({"target_tokens", "logprobs", "advantages"}, {"clip_low_threshold", "clip_high_threshold"}),
    "cispo": ({"target_tokens", "logprobs", "advantages"}, {"clip_low_threshold", "clip_high_threshold"}),
    "dro": ({"target_tokens", "logprobs", "advantages"}, set()),
}

LOSS_CONFIG_DEFAULTS = {
    "cross_entropy": {},
    "importance_sampling": {},
    "ppo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "cispo": {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
    "dro": {"beta": 0.05},
}

OUTPUT_TYPE = {
    "cross_entropy": "CrossEntropyLossReturn",
    "importance_sampling": "ImportanceSamplingLossReturn",
    "ppo": "PPOLossReturn",
    "cispo": "CISPOLossReturn",
    "dro": "DROLossReturn",
}


def resolve_config(loss_fn: str, config: dict) -> dict:
    """Defaults merged with the request's loss_fn_config; raises KeyError naming an unknown key."""
    defaults = LOSS_CONFIG_DEFAULTS[loss_fn]
    for key in config:
        if key not in defaults:
            raise KeyError(key)
    return {**defaults, **config}


def _threshold(inputs: dict, config: dict, name: str, like: torch.Tensor) -> torch.Tensor:
    # Per-token thresholds in loss_fn_inputs win over the scalar in loss_fn_config (§9.6).
    value = inputs[name] if name in inputs else config[name]
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


def cross_entropy(logprobs, inputs, config):
    weights = inputs.get("weights")
    if weights is None:
        weights = torch.ones_like(logprobs)
    return -(weights * logprobs).sum()


def importance_sampling(logprobs, inputs, config):
    ratio = torch.exp(logprobs - inputs["logprobs"])
    return -(ratio * inputs["advantages"]).sum()


def ppo(logprobs, inputs, config):
    adv = inputs["advantages"]
    ratio = torch.exp(logprobs - inputs["logprobs"])
    lo = _threshold(inputs, config, "clip_low_threshold", ratio)
    hi = _threshold(inputs, config, "clip_high_threshold", ratio)
    clipped = torch.clamp(ratio, min=lo, max=hi)
    return -torch.minimum(ratio * adv, clipped * adv).sum()


def cispo(logprobs, inputs, config):
    ratio = torch.exp(logprobs - inputs["logprobs"])
    lo = _threshold(inputs, config, "clip_low_threshold", ratio)
    hi = _threshold(inputs, config, "clip_high_threshold", ratio)
    weight = torch.clamp(ratio, min=lo, max=hi).detach()
    return -(weight * logprobs * inputs["advantages"]).sum()


def dro(logprobs, inputs, config):
    beta = config["beta"]
    penalty = 0.5 * beta * (logprobs - inputs["logprobs"]) ** 2
    return -(logprobs * inputs["advantages"] - penalty).sum()


LOSSES = {
    "cross_entropy": cross_entropy,
    "importance_sampling": importance_sampling,
    "ppo": ppo,
    "cispo": cispo,
    "dro": dro,
}
