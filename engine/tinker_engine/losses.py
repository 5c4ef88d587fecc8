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
    "gspo": (
        {"target_tokens", "logprobs", "advantages", "sequence_ratio_mask"},
        {"clip_low_threshold", "clip_high_threshold"},
    ),
}

LOSS_CONFIG_DEFAULTS = {
    "cross_entropy": {},
    "importance_sampling": {},
    "ppo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "cispo": {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
    "dro": {"beta": 0.05},
    # The Tinker docs give GSPO the ε_low/ε_high of PPO's clip on the same two config keys; their
    # defaults are not published, so PPO's are used (both can be set per request).
    "gspo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
}

OUTPUT_TYPE = {
    "cross_entropy": "CrossEntropyLossReturn",
    "importance_sampling": "ImportanceSamplingLossReturn",
    "ppo": "PPOLossReturn",
    "cispo": "CISPOLossReturn",
    "dro": "DROLossReturn",
    "gspo": "GSPOLossReturn",
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
    if name in inputs:
        return inputs[name].to(like.dtype)
    # A fill on the device: a scalar copied from the host would wait for all queued work on CUDA.
    return torch.full((), config[name], dtype=like.dtype, device=like.device)


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


def gspo(logprobs, inputs, config):
    """GSPO-token (Tinker's variant of Zheng et al. 2025): every token carries the value of the
    sequence ratio — the geometric mean of the token ratios over the tokens sequence_ratio_mask
    marks — with the gradient of its own logprob, then PPO's clipped objective."""
    in_ratio = inputs["sequence_ratio_mask"] != 0
    # The mean over the marked tokens without selecting them: a selection's size comes from the
    # mask's values, which on CUDA makes the host wait for the device, datum after datum. A datum
    # that marks no token gets a log ratio of 0; validation admits it only when every advantage is
    # zero, where any finite ratio gives the same (zero) loss and gradient.
    marked = torch.where(in_ratio, logprobs.detach() - inputs["logprobs"], 0.0)
    log_ratio = marked.sum() / in_ratio.sum().clamp(min=1)
    ratio = torch.exp(log_ratio + logprobs - logprobs.detach())
    lo = _threshold(inputs, config, "clip_low_threshold", ratio)
    hi = _threshold(inputs, config, "clip_high_threshold", ratio)
    adv = inputs["advantages"]
    return -torch.minimum(ratio * adv, torch.clamp(ratio, min=lo, max=hi) * adv).sum()


LOSSES = {
    "cross_entropy": cross_entropy,
    "importance_sampling": importance_sampling,
    "ppo": ppo,
    "cispo": cispo,
    "dro": dro,
    "gspo": gspo,
}
