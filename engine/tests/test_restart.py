"""Crash recovery: save, kill -9 the engine, restart on the same data dir, recreate, continue."""

from http_client import Client, corpus, datum


def test_recreate_from_state_after_engine_crash(fresh_engine, tmp_path):
    data_dir = tmp_path / "data"
    data = [datum(s) for s in corpus(3, 30)]
    probe = [datum(corpus(1, 30, 800)[0])]

    first = fresh_engine(data_dir)
    c = Client(first.url)
    model = c.create_model(c.session(), 0, seed=21, rank=8)
    c.forward_backward(model, 1, data)
    c.optim_step(model, 2, lr=2e-2)
    state = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 3, "path": "step-1"})["request_id"])["path"]
    sampler_path = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 4, "path": "step-1"})[
        "request_id"])["path"]
    at_save = c.forward_logprobs(model, 5, probe)
    # What an uninterrupted run computes for the next step.
    c.forward_backward(model, 6, data)
    c.optim_step(model, 7, lr=2e-2)
    uninterrupted = c.forward_logprobs(model, 8, probe)
    # A checkpoint write that was cut short leaves only a temporary directory behind.
    leftover = data_dir / "runs" / model / "weights" / ".tmp-step-2-deadbeef"
    leftover.mkdir()
    (leftover / "adapter_model.safetensors").write_bytes(b"partial")
    first.kill()

    second = fresh_engine(data_dir)
    c = Client(second.url)
    assert c.post("forward_backward", {"model_id": model, "seq_id": 9, "forward_backward_input": {
        "data": data, "loss_fn": "cross_entropy"}}).status == 404
    assert not leftover.exists()
    listed = c.get(f"training_runs/{model}/checkpoints").json()["checkpoints"]
    assert sorted(ck["checkpoint_id"] for ck in listed) == ["sampler_weights/step-1", "weights/step-1"]
    assert c.get(f"training_runs/{model}").json()["base_model"] == "tiny-qwen3"

    info = c.ok("weights_info", {"tinker_path": state})
    assert info["base_model"] == "tiny-qwen3" and info["lora_rank"] == 8
    session = c.session()
    recreated = c.ok("create_model", {"session_id": session, "model_seq_id": 0, "base_model": info["base_model"],
                                      "lora_config": {"rank": info["lora_rank"], "seed": 999}})
    c.done(recreated["request_id"])
    new_model = recreated["model_id"]
    c.done(c.ok("load_weights", {"model_id": new_model, "seq_id": 1, "path": state, "optimizer": True})["request_id"])
    assert c.forward_logprobs(new_model, 2, probe) == at_save
    c.forward_backward(new_model, 3, data)
    c.optim_step(new_model, 4, lr=2e-2)
    # Same weights, optimizer state, data and thread count: bitwise the uninterrupted result.
    assert c.forward_logprobs(new_model, 5, probe) == uninterrupted

    sampler = c.ok("create_sampling_session", {"session_id": session, "sampling_session_seq_id": 0,
                                               "model_path": sampler_path})["sampling_session_id"]
    out = c.done(c.ok("asample", {"sampling_session_id": sampler, "seq_id": 0, "prompt": {"chunks": [{"tokens": [5, 6]}]},
                                  "sampling_params": {"max_tokens": 3, "seed": 1}})["request_id"])
    assert len(out["sequences"][0]["tokens"]) == 3
