"""Training's host → device transfers and its losses' clip thresholds queue no stream sync on CUDA
(trainer.upload, losses._threshold): a sync there makes the host's kernel launches wait for the
device's execution, every micro-batch."""

import numpy as np
import pytest
import torch

from devices import DEVICES
from tinker_engine.losses import LOSSES, resolve_config
from tinker_engine.transfers import upload


def host_inputs(n=64):
    rng = np.random.default_rng(0)
    return {
        "logprobs": rng.normal(-2.0, 0.5, n).astype(np.float32),
        "advantages": rng.normal(0.0, 1.0, n).astype(np.float32),
        "weights": np.ones(n, dtype=np.float32),
        "clip_low_threshold": np.full(n, 0.7, dtype=np.float32),
        "sequence_ratio_mask": (np.arange(n) >= n // 4).astype(np.float32),  # a prompt, then sampled tokens
    }


@pytest.mark.parametrize("device", DEVICES)
def test_uploads_carry_the_host_values(device):
    host = host_inputs()
    for v in host.values():
        t = upload(torch.from_numpy(v), torch.device(device))
        assert t.device.type == device and np.array_equal(t.cpu().numpy(), v)


def clipped_objective(name, lp, inputs, lo, hi):
    ratio = torch.exp(lp - inputs["logprobs"])
    clipped, adv = torch.clamp(ratio, min=lo, max=hi), inputs["advantages"]
    return -torch.minimum(ratio * adv, clipped * adv).sum() if name == "ppo" else -(clipped * lp * adv).sum()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["ppo", "cispo"])
def test_thresholds_from_config_and_from_inputs_clip_as_float32_tensors_would(device, name):
    dev = torch.device(device)
    host = host_inputs()
    lp = torch.from_numpy(host["logprobs"] + 0.1).to(dev)
    inputs = {k: upload(torch.from_numpy(v), dev) for k, v in host.items()}
    per_token = inputs.pop("clip_low_threshold")
    config = resolve_config(name, {"clip_low_threshold": 0.9})
    lo, hi = (torch.tensor(config[k], dtype=torch.float32, device=dev) for k in ("clip_low_threshold", "clip_high_threshold"))
    assert torch.equal(LOSSES[name](lp, inputs, config), clipped_objective(name, lp, inputs, lo, hi))
    with_per_token = {**inputs, "clip_low_threshold": per_token}  # per-token values win over the config's
    assert torch.equal(LOSSES[name](lp, with_per_token, config), clipped_objective(name, lp, inputs, per_token, hi))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only")
def test_uploads_and_the_built_in_losses_queue_no_sync():
    dev = torch.device("cuda")
    host = host_inputs()
    lp = torch.from_numpy(host["logprobs"] + 0.1).to(dev)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # raises on any stream or device sync
    try:
        inputs = {k: upload(torch.from_numpy(v), dev) for k, v in host.items()}
        per_token = inputs.pop("clip_low_threshold")
        for name in ("cross_entropy", "importance_sampling", "ppo", "cispo", "dro", "gspo"):
            LOSSES[name](lp, inputs, resolve_config(name, {}))
        LOSSES["ppo"](lp, {**inputs, "clip_low_threshold": per_token}, resolve_config("ppo", {}))
    finally:
        torch.cuda.set_sync_debug_mode(0)
