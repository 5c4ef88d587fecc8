"""Conformance: the official tinker SDK (0.38.0 current, 0.25.0 protobuf era, 0.16.1 JSON era), unmodified."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from http_client import Client, corpus, datum
from sdk_env import sdk_python

FLOWS = Path(__file__).parent / "sdk_flows"
FLOW = FLOWS / "conformance_flow.py"


def run_flow(version: str, engine, flow: Path = FLOW) -> dict:
    env = {**os.environ, "TINKER_TELEMETRY": "0", "TINKER_API_KEY": "tml-conformance"}
    env.pop("TINKER_BASE_URL", None)
    proc = subprocess.run(
        [str(sdk_python(version)), str(flow), engine.url],
        capture_output=True, text=True, timeout=600, env=env, cwd=flow.parent,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"SDK {version} flow failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    return json.loads(lines[-1][len("REPORT "):])


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


@pytest.mark.parametrize("version", ["0.38.0", "0.25.0", "0.16.1"])
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


def test_sdk_038_protocol(engine):
    """What 0.38 added: create-via-load, sequence ids, `stop: []`, session finish, and a clean
    refusal (400 naming the option, no retries) of what the engine does not serve."""
    r = run_flow("0.38.0", engine, FLOWS / "protocol_038_flow.py")
    assert r["info_optimizer"] == "adamw"
    session = r["restored_model_ids"][0].rsplit(":train:", 1)[0]
    assert r["restored_model_ids"] == [f"{session}:train:1", f"{session}:train:2"]
    first, with_opt, saved = r["restored_logprobs"]
    assert close(first, saved, 1e-5) and close(with_opt, saved, 1e-5)
    ids = r["sequence_ids"] + r["sequence_ids_again"]
    assert len(ids) == 5 and len(set(ids)) == 5 and all(ids)
    assert r["no_stop_lengths"] == [10, 10]
    assert r["compute_logprobs_len"] == 24 and r["from_handle_tokens"] > 0
    for name, failure in r["refused"].items():
        assert failure is not None, f"{name} was accepted"
        assert failure["type"] == "BadRequestError" and "not served by this engine" in failure["message"], failure
        assert failure["seconds"] < 10, f"{name} was retried"
    assert "dimuon" in r["refused"]["dimuon"]["message"] and "gspo" in r["refused"]["gspo"]["message"]
    assert r["after_refusals"] > 0
    assert r["rest_checkpoints"] == ["weights/s1"] and r["rest_weights_info_rank"] == 4
    assert r["closed"]


def test_session_finish_and_create_via_load_over_http(engine):
    c = Client(engine.url)
    session = c.session()
    model = c.create_model(session, model_seq_id=0)
    c.forward_backward(model, 1, [datum(t) for t in corpus(2)])
    path = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 2, "path": "w"})["request_id"])["path"]
    load = {"session_id": session, "model_seq_id": 1, "path": path, "optimizer": True,
            "optimizer_config": {"type": "adamw"}, "type": "load_weights"}
    first = c.ok("load_weights", load)
    assert first == c.ok("load_weights", load), "a resend is answered with the original request"
    assert first["model_id"] == f"{session}:train:1"
    c.done(first["request_id"])
    assert c.post("load_weights", {**load, "optimizer": False}).status == 409  # seq id 1 is used
    assert c.post("load_weights", {**load, "model_seq_id": 2, "optimizer_config": {"type": "dimuon"}}).status == 400
    c.forward_backward(f"{session}:train:1", 1, [datum(t) for t in corpus(2)])  # training starts at seq 1

    assert c.post("session_heartbeat", {"session_id": session}).status == 200
    finished = c.ok(f"sessions/{session}/finish", {"reason": {"type": "errored"}, "detail": "boom"})
    assert finished["reason"] == {"type": "errored"}
    again = c.ok(f"sessions/{session}/finish", {"reason": {"type": "success"}, "detail": None})
    assert again["reason"] == {"type": "errored"}, "the first finish wins"
    assert c.post("session_heartbeat", {"session_id": session}).status == 410
    assert c.post(f"sessions/{session}/finish", {"reason": {"type": "later"}}).status == 400
