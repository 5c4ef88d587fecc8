"""Conformance: the official tinker SDK (0.38.0 current, 0.25.0 protobuf era, 0.16.1 JSON era), unmodified."""

import math
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


# The newest SDK (what hosted users run) in the gate; the older lines in the fuller tier.
@pytest.mark.parametrize("version", ["0.38.0", pytest.param("0.25.0", marks=pytest.mark.full), pytest.param("0.16.1", marks=pytest.mark.full)])
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


# Every public method of SDK 0.38's four clients, and how this suite accounts for it. `*_async`
# variants send the same requests as their sync counterparts and are covered by them.
EXERCISED = {
    "ServiceClient": ["create_lora_training_client", "create_training_client_from_state",
                      "create_training_client_from_state_with_optimizer", "create_sampling_client",
                      "get_server_capabilities", "create_rest_client", "close"],
    "TrainingClient": ["forward", "forward_backward", "optim_step", "save_state", "load_state",
                       "load_state_with_optimizer", "save_weights_for_sampler", "save_weights_and_get_sampling_client",
                       "create_sampling_client", "get_info"],
    "SamplingClient": ["sample", "compute_logprobs", "get_base_model", "get_sampler_handle", "from_sampler_handle"],
    "RestClient": ["list_checkpoints", "get_training_run", "get_training_run_by_tinker_path",
                   "get_weights_info_by_tinker_path", "delete_checkpoint", "list_training_runs", "list_user_checkpoints",
                   "get_server_capabilities", "get_session", "list_sessions", "set_checkpoint_ttl_from_tinker_path",
                   "delete_checkpoint_from_tinker_path"],
}
# Refused by the engine with a 4xx naming the call (or, for calls the SDK checks first, refused by
# the SDK itself before any request).
REFUSED = {
    "ServiceClient": ["copy_weights"],
    "TrainingClient": ["save_weights_external"],
    "RestClient": ["copy_weights", "get_external_weights_urls", "get_current_checkpoint_storage_usage",
                   "publish_checkpoint_from_tinker_path", "unpublish_checkpoint_from_tinker_path", "get_billing_usage",
                   "get_audit_log", "assign_session_project", "export_session_trace"],
}
# Exercised by test_conformance_custom_loss.py (the SDK traces custom losses with torch, which
# that test lends to the SDK's venv): server-side (--custom-loss-server-side) and client-side.
EXERCISED_ELSEWHERE = {
    "ServiceClient": ["create_custom_loss"],
    "TrainingClient": ["forward_backward_custom"],
}
# No engine traffic of their own: local helpers, hub downloads (get_tokenizer), an alias of
# create_sampling_client, JWT-only identity, and session search (a hosted console feature; the
# engine answers 404).
CLIENT_SIDE = {
    "ServiceClient": ["get_console_url", "get_telemetry"],
    "TrainingClient": ["get_console_url", "get_telemetry", "get_tokenizer"],
    "SamplingClient": ["get_telemetry", "get_tokenizer", "on_queue_state_change", "create"],
    "RestClient": ["get_telemetry", "whoami", "get_sampler", "search_sessions"],
}


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
    last_n, full = r["last_n_prompt_logprobs"], r["full_prompt_logprobs"]
    assert len(last_n) == len(full) == 8 and last_n[:6] == [None] * 6
    assert close(last_n[6:], full[6:], 1e-6)
    assert r["compute_logprobs_len"] == 24 and r["from_handle_tokens"] > 0
    for name, failure in r["refused"].items():
        assert failure is not None, f"{name} was accepted"
        assert failure["type"] == "BadRequestError" and "not served by this engine" in failure["message"], failure
        assert failure["seconds"] < 10, f"{name} was retried"
    assert "dimuon" in r["refused"]["dimuon"]["message"]
    p = r["provenance"]
    assert all(sid.startswith(session) for sid in p["sequence_ids"]) and math.isfinite(p["accepted"])
    assert "position" in p["shifted"]["message"] and "sampled tokens" in p["shifted"]["message"], p["shifted"]
    if not p["same_tokens"]:
        assert p["other_sequence"] is not None and p["other_sequence"]["type"] == "BadRequestError", p["other_sequence"]
    assert "'stable_reinforce' is not served by this engine" in p["stable_reinforce"]["message"], p["stable_reinforce"]
    assert p["stable_reinforce"]["seconds"] < 10, "stable_reinforce was retried"
    assert "has no provenance spans" in p["stable_reinforce_no_spans"]["message"], p["stable_reinforce_no_spans"]
    assert "'dimuon'" in r["refused"]["dimuon_params"]["message"] and "update rule" in r["refused"]["dimuon"]["message"]
    check_scoring_options(r["scoring"])
    assert r["after_refusals"] > 0
    assert r["rest_checkpoints"] == ["weights/s1"] and r["rest_weights_info_rank"] == 4
    assert r["after_external"] > 0, "a refused save_weights_external consumed its seq id"
    for name, outcome in r["rest"].items():
        assert "ok" in outcome, f"RestClient.{name}: {outcome}"
    for name, failure in r["rest_refused"].items():
        assert failure is not None and failure["seconds"] < 10, f"RestClient.{name}: {failure}"
        assert failure["type"] in ("BadRequestError", "NotFoundError", "ValueError"), failure
    assert r["closed"]

    for cls, methods in r["public_methods"].items():
        accounted = (set(EXERCISED.get(cls, [])) | set(EXERCISED_ELSEWHERE.get(cls, [])) | set(REFUSED.get(cls, []))
                     | set(CLIENT_SIDE.get(cls, [])))
        missing = [m for m in methods if m not in accounted and m.removesuffix("_async") not in accounted]
        assert not missing, f"{cls} methods of SDK 0.38 this suite does not account for: {missing}"


def check_scoring_options(r):
    """0.38's topk_sample_logprobs, prompt_alt_tokens_k and target_prompt_logprobs as the SDK parsed
    them, against the prompt logprobs of a full forward over the same tokens."""
    n, sampled = len(r["tokens"]), r["sampled"]
    assert len(r["topk_sample"]) == len(sampled) == 4
    for t, row in enumerate(r["topk_sample"]):
        full = r["full_topk"][n + t]
        assert [tok for tok, _ in row] == [tok for tok, _ in full] and close([v for _, v in row], [v for _, v in full], 1e-4)
        assert abs(r["sampled_logprobs"][t] - r["full_prompt_logprobs"][n + t]) < 1e-4
    alt = r["alt_logprobs"]
    assert len(r["alt_tokens"]) == len(alt) == n - 1 and all(len(row) == 2 for row in alt)
    dense = r["dense_target"]
    assert dense["shape"] == [n - 1, 2] and dense["sparse"] is None
    assert all(close(a, b, 1e-4) for a, b in zip(dense["values"], alt)), "alternatives and targets disagree"
    sparse = r["sparse_target"]
    assert sparse["shape"] == [n - 1, 3] and sparse["crow"] == sparse["sent_crow"] and sparse["col"] == [2, 0]
    assert close(sparse["values"], [r["full_prompt_logprobs"][2], alt[n - 2][0]], 1e-4)


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

    # A damaged checkpoint is refused before any model exists (its checksums no longer match).
    broken = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 3, "path": "broken"})["request_id"])["path"]
    run, _, name = broken.removeprefix("tinker://").partition("/weights/")
    directory = engine.data_dir / "runs" / run / "weights" / name
    (directory / "adapter_model.safetensors").write_bytes(b"not safetensors")
    refused = c.post("load_weights", {**load, "model_seq_id": 3, "path": broken})
    assert refused.status == 422 and str(directory / "adapter_model.safetensors") in refused.json()["detail"]
    assert c.post("get_info", {"model_id": f"{session}:train:3"}).status == 404
    # A create-via-load whose load fails (here: a checkpoint from before checksums, so only the
    # load finds it unreadable) leaves no model that trains on fresh weights.
    meta = json.loads((directory / "checkpoint.json").read_text())
    for key in ("files", "checksum"):
        meta.pop(key)
    (directory / "checkpoint.json").write_text(json.dumps(meta))
    failed = c.ok("load_weights", {**load, "model_seq_id": 4, "path": broken})
    assert "unreadable" in c.result(failed["request_id"])["error"]
    after = c.submit_fb(failed["model_id"], 1, [datum(t) for t in corpus(2)])
    assert after.status != 200 or "error" in c.result(after.json()["request_id"])

    assert c.post("session_heartbeat", {"session_id": session}).status == 200
    finished = c.ok(f"sessions/{session}/finish", {"reason": {"type": "errored"}, "detail": "boom"})
    assert finished["reason"] == {"type": "errored"}
    again = c.ok(f"sessions/{session}/finish", {"reason": {"type": "success"}, "detail": None})
    assert again["reason"] == {"type": "errored"}, "the first finish wins"
    assert c.post("session_heartbeat", {"session_id": session}).status == 410
    assert c.post(f"sessions/{session}/finish", {"reason": {"type": "later"}}).status == 400
