"""Conformance: the official tinker SDK (0.25.0 protobuf era, 0.16.1 JSON era), unmodified."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from sdk_env import sdk_python

FLOW = Path(__file__).parent / "sdk_flows" / "conformance_flow.py"


def run_flow(version: str, engine) -> dict:
    env = {**os.environ, "TINKER_TELEMETRY": "0", "TINKER_API_KEY": "tml-conformance"}
    env.pop("TINKER_BASE_URL", None)
    proc = subprocess.run(
        [str(sdk_python(version)), str(FLOW), engine.url],
        capture_output=True, text=True, timeout=600, env=env, cwd=FLOW.parent,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"SDK {version} flow failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    return json.loads(lines[-1][len("REPORT "):])


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


@pytest.mark.parametrize("version", ["0.25.0", "0.16.1"])
def test_official_sdk_flow(version, engine):
    r = run_flow(version, engine)
    assert {"tiny-qwen3", "tiny-llama3"} <= set(r["models"])
    assert r["info_model_name"] == "tiny-qwen3"

    losses = r["losses"]
    assert losses[-1] < 0.7 * losses[0], losses
    print(version, "losses", [round(x, 1) for x in losses], "forward", r["forward_loss"])
    assert r["optim_metrics"] and "unclipped_grad_l2:mean" in r["optim_metrics"]
    assert abs(r["forward_loss"] - r["forward_logprob_sum"]) < 1e-3 * abs(r["forward_loss"])
    assert r["forward_loss"] < losses[0]
    assert r["ppo_loss"] < 0  # ratio ≈ 1 with advantage 1 → loss ≈ −N

    assert r["state_path"].startswith("tinker://") and "/weights/ckpt-1" in r["state_path"]
    assert r["sampler_path"].endswith("/sampler_weights/sampler-1")

    assert r["sample_tokens"] == r["sample_tokens_again"], "same seed must give the same samples"
    assert len(r["sample_tokens"]) == 3 and all(len(t) <= 12 for t in r["sample_tokens"])
    assert all(n == len(t) for n, t in zip(r["sample_logprobs_len"], r["sample_tokens"]))
    assert r["prompt_logprobs"][0] is None and len(r["prompt_logprobs"]) == 10
    assert r["topk_prompt_logprobs"][0] is None and all(len(row) == 2 for row in r["topk_prompt_logprobs"][1:])

    computed = r["compute_logprobs"]
    assert computed[0] is None
    assert close(computed[1:], r["forward_logprobs_seq0"], 1e-4)

    assert not close(r["logprobs_after_extra_step"], r["saved_logprobs_seq0"], 1e-4)
    assert close(r["logprobs_after_load_state"], r["saved_logprobs_seq0"], 1e-5)
    assert close(r["logprobs_after_load_state_with_optimizer"], r["saved_logprobs_seq0"], 1e-5)
    assert close(r["restored_logprobs"], r["saved_logprobs_seq0"], 1e-5)
    assert r["restored_losses"][-1] < r["restored_losses"][0]

    assert r["path_sampler_base_model"] == "tiny-qwen3"
    assert len(r["path_sample"][0]) > 0 and r["base_sample_len"] > 0
    assert r["checkpoint_ids"] == ["sampler_weights/sampler-1", "weights/ckpt-1"]
    assert r["training_run_base_model"] == "tiny-qwen3"
    assert r["checkpoint_ids_after_delete"] == ["weights/ckpt-1"]
