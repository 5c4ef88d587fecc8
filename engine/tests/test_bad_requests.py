"""Bad requests get a 4xx JSON {"detail": ...} naming the problem and never touch model state."""

import json

import pytest

from http_client import Client, corpus, datum

VOCAB = 151936


@pytest.fixture(scope="module")
def setup(engine):
    c = Client(engine.url)
    sid = c.session()
    model = c.create_model(sid, 0, seed=1)
    state = {"c": c, "sid": sid, "model": model, "seq": 1}
    probe = [datum(corpus(1, 20, 700)[0])]

    def next_seq():
        state["seq"] += 1
        return state["seq"] - 1

    state["next_seq"] = next_seq
    state["probe"] = lambda: c.forward_logprobs(model, next_seq(), probe)[0]
    state["before"] = state["probe"]()
    return state


def fb_body(model, seq, data, loss_fn="cross_entropy", config=None):
    return {"model_id": model, "seq_id": seq,
            "forward_backward_input": {"data": data, "loss_fn": loss_fn, "loss_fn_config": config}}


def tokens_datum(tokens, targets, weights=None):
    return {"model_input": {"chunks": [{"tokens": tokens}]},
            "loss_fn_inputs": {"target_tokens": {"data": targets, "dtype": "int64"},
                               "weights": {"data": weights or [1.0] * len(targets), "dtype": "float32"}}}


GOOD = [1, 2, 3, 4]
CASES = {
    "unknown loss": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, GOOD)], "hinge"), 400, "unknown loss_fn"),
    "out-of-vocab input": (lambda m, s: fb_body(m, s, [tokens_datum([1, VOCAB, 3, 4], GOOD)]), 400, f"token id {VOCAB}"),
    "negative target": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, [1, -1, 2, 3])]), 400, "token id -1"),
    "target length mismatch": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, [1, 2, 3])]), 400, "model_input has 4 tokens"),
    "weights length mismatch": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, GOOD, [1.0, 1.0])]), 400, "weights"),
    "nan weights": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, GOOD, [1.0, float("nan"), 1.0, 1.0])]), 400, "NaN"),
    "missing rl inputs": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, GOOD)], "ppo"), 400, "missing 'advantages'"),
    "unknown loss input": (
        lambda m, s: fb_body(m, s, [{**tokens_datum(GOOD, GOOD), "loss_fn_inputs": {
            **tokens_datum(GOOD, GOOD)["loss_fn_inputs"], "mask": {"data": [1.0] * 4, "dtype": "float32"}}}]),
        400, "mask"),
    "unknown config key": (lambda m, s: fb_body(m, s, [tokens_datum(GOOD, GOOD)], "cross_entropy", {"beta": 1.0}), 400, "beta"),
    "empty data": (lambda m, s: fb_body(m, s, []), 400, "at least one datum"),
    "empty input": (lambda m, s: fb_body(m, s, [tokens_datum([], [])]), 400, "empty"),
    "image chunk": (
        lambda m, s: fb_body(m, s, [{"model_input": {"chunks": [{"data": "aGk=", "format": "png"}]},
                                     "loss_fn_inputs": {}}]), 400, "image"),
    "string tokens": (lambda m, s: fb_body(m, s, [tokens_datum(["a"], GOOD)]), 400, "integers"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_forward_backward(setup, name):
    c, model = setup["c"], setup["model"]
    make, status, needle = CASES[name]
    r = c.post("forward_backward", make(model, setup["next_seq"]()))
    assert r.status == status, r.raw
    assert needle in r.json()["detail"]


def test_seq_id_must_be_positive(setup):
    r = setup["c"].post("forward_backward", fb_body(setup["model"], 0, [tokens_datum(GOOD, GOOD)]))
    assert r.status == 400 and "seq_id" in r.json()["detail"]


def test_rejected_requests_left_the_model_untouched(setup):
    c, model = setup["c"], setup["model"]
    # A NaN/inf loss fails the future with a message and discards that request's gradients.
    huge_gap = tokens_datum(GOOD, GOOD)
    huge_gap["loss_fn_inputs"].pop("weights")
    huge_gap["loss_fn_inputs"]["logprobs"] = {"data": [-1e30] * 4, "dtype": "float32"}
    huge_gap["loss_fn_inputs"]["advantages"] = {"data": [1.0] * 4, "dtype": "float32"}
    r = c.post("forward_backward", fb_body(model, setup["next_seq"](), [huge_gap], "importance_sampling"))
    assert r.status == 200
    failed = c.result(r.json()["request_id"])
    assert "non-finite" in failed["error"] and failed["category"] == "user"
    c.optim_step(model, setup["next_seq"](), lr=0.5)  # would move the weights if any gradient had leaked
    assert setup["probe"]() == setup["before"]


def expect(r, status, needle):
    assert r.status == status, (r.status, r.raw)
    assert r.raw, "error responses always have a body"
    body = r.json()
    assert needle in body["detail"], body


def test_unknown_ids_are_404(setup):
    c, sid = setup["c"], setup["sid"]
    ghost = f"{sid}:train:99"
    expect(c.post("forward_backward", fb_body(ghost, 1, [tokens_datum(GOOD, GOOD)])), 404, "unknown model")
    expect(c.post("optim_step", {"model_id": ghost, "seq_id": 1, "adam_params": {"learning_rate": 1e-3}}), 404, ghost)
    expect(c.post("save_weights", {"model_id": ghost, "seq_id": 1, "path": "x"}), 404, ghost)
    expect(c.post("get_info", {"model_id": ghost}), 404, ghost)
    expect(c.post("unload_model", {"model_id": ghost}), 404, ghost)
    expect(c.post("create_model", {"session_id": "nope", "model_seq_id": 0, "base_model": "tiny-qwen3"}), 404, "session")
    expect(c.post("create_sampling_session", {"session_id": "nope", "base_model": "tiny-qwen3"}), 404, "session")
    expect(c.post("asample", {"sampling_session_id": "nope", "seq_id": 0, "prompt": {"chunks": [{"tokens": GOOD}]}}),
           404, "sampling session")
    expect(c.get("samplers/nope"), 404, "sampling session")
    expect(c.post("retrieve_future", {"request_id": "nope"}), 404, "request_id")
    expect(c.post("weights_info", {"tinker_path": f"tinker://{ghost}/weights/none"}), 404, "not found")
    expect(c.get(f"training_runs/{ghost}"), 404, "unknown training run")
    expect(c.request("DELETE", f"training_runs/{setup['model']}/checkpoints/weights/none"), 404, "not found")
    expect(c.post("load_weights", {"model_id": setup["model"], "seq_id": setup["next_seq"](),
                                   "path": f"tinker://{ghost}/weights/none", "optimizer": False}), 404, "not found")


def test_malformed_bodies_and_paths_are_400(setup, engine):
    c, sid, model = setup["c"], setup["sid"], setup["model"]
    expect(c.post("optim_step", raw=b"{not json"), 400, "malformed JSON")
    expect(c.post("optim_step", raw=b"[1, 2]"), 400, "JSON object")
    expect(c.post("forward_backward", raw=b"\xff\xff\xff\x00garbage", content_type="application/x-protobuf"),
           400, "protobuf")
    expect(c.post("weights_info", {"tinker_path": "s3://bucket/x"}), 400, "invalid tinker path")
    expect(c.post("create_model", {"session_id": sid, "model_seq_id": 5, "base_model": "gpt-17"}), 400, "unknown base model")
    expect(c.post("create_model", {"session_id": sid, "model_seq_id": 6, "base_model": "tiny-qwen3",
                                   "lora_config": {"rank": 0}}), 400, "rank")
    expect(c.post("optim_step", {"model_id": model, "seq_id": setup["next_seq"](),
                                 "adam_params": {"learning_rate": -1}}), 400, "learning_rate")
    expect(c.post("save_weights", {"model_id": model, "seq_id": setup["next_seq"](), "path": "../escape"}),
           400, "invalid checkpoint name")
    sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 50,
                                               "base_model": "tiny-qwen3"})["sampling_session_id"]
    prompt = {"chunks": [{"tokens": GOOD}]}
    expect(c.post("asample", {"sampling_session_id": sampler, "seq_id": 0, "prompt": {"chunks": [{"tokens": [VOCAB]}]}}),
           400, "vocabulary")
    expect(c.post("asample", {"sampling_session_id": sampler, "seq_id": 1, "prompt": prompt, "num_samples": 0}),
           400, "num_samples")
    expect(c.post("asample", {"sampling_session_id": sampler, "seq_id": 2, "prompt": prompt,
                              "sampling_params": {"top_p": 0}}), 400, "top_p")
    expect(c.post("asample", {"sampling_session_id": sampler, "seq_id": 3, "prompt": prompt,
                              "sampling_params": {"max_tokens": 10**6}}), 400, "context")
    big = json.dumps({"pad": "x" * (5 << 20)}).encode()
    expect(c.post("telemetry", raw=big), 413, "larger than")


def test_api_keys(engine, fresh_engine):
    expect(Client(engine.url, api_key=None).get("get_server_capabilities"), 401, "X-API-Key")
    expect(Client(engine.url, api_key="sk-other").get("get_server_capabilities"), 401, "tml-")
    assert Client(engine.url, api_key="tml-anything").get("get_server_capabilities").status == 200

    locked = fresh_engine(None, "--api-key", "tml-secret")
    expect(Client(locked.url, api_key="tml-wrong").get("get_server_capabilities"), 401, "invalid API key")
    assert Client(locked.url, api_key="tml-secret").get("get_server_capabilities").status == 200


def test_a_non_finite_loss_in_any_micro_batch_fails_the_request_and_keeps_the_weights(fresh_engine):
    # One datum per micro-batch: the non-finite loss is in the middle, after a backward has added
    # gradients and before another does; the request fails and none of them reaches the weights.
    c = Client(fresh_engine(None, "--max-batch-tokens", "4").url)
    model = c.create_model(c.session(), 0, seed=1)
    probe = [datum(corpus(1, 20, 700)[0])]
    before = c.forward_logprobs(model, 1, probe)[0]

    def rl_datum(sampling_logprob):
        d = tokens_datum(GOOD, GOOD)
        d["loss_fn_inputs"].pop("weights")
        d["loss_fn_inputs"]["logprobs"] = {"data": [sampling_logprob] * 4, "dtype": "float32"}
        d["loss_fn_inputs"]["advantages"] = {"data": [1.0] * 4, "dtype": "float32"}
        return d

    r = c.post("forward_backward", fb_body(model, 2, [rl_datum(-1.0), rl_datum(-1e30), rl_datum(-1.0)], "importance_sampling"))
    failed = c.result(r.json()["request_id"])
    assert "loss is -inf (non-finite)" in failed["error"] and failed["category"] == "user"
    c.optim_step(model, 3, lr=0.5)  # would move the weights if any micro-batch's gradients had leaked
    assert c.forward_logprobs(model, 4, probe)[0] == before
