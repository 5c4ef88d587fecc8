"""Per-model ordering by seq_id, dedupe of resent requests, gradient accumulation (raw HTTP)."""

from http_client import Client, corpus, datum


def weights_probe(client, model_id, seq_id):
    return client.forward_logprobs(model_id, seq_id, [datum(corpus(1, 30, 900)[0])])[0]


def test_out_of_order_arrivals_execute_in_seq_order(engine):
    c = Client(engine.url)
    sid = c.session()
    data_a, data_b = [datum(s) for s in corpus(2)]
    reference = c.create_model(sid, 0, seed=3)
    c.forward_backward(reference, 1, [data_a])
    c.optim_step(reference, 2)
    c.forward_backward(reference, 3, [data_b])
    c.optim_step(reference, 4)

    shuffled = c.create_model(sid, 1, seed=3)
    # The SDK posts the first chunk last; here everything after seq 1 arrives before it.
    later = {}
    later[4] = c.ok("optim_step", {"model_id": shuffled, "seq_id": 4, "adam_params": {"learning_rate": 1e-2}})
    later[3] = c.submit_fb(shuffled, 3, [data_b]).json()
    later[2] = c.ok("optim_step", {"model_id": shuffled, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})
    pending = c.post("retrieve_future", {"request_id": later[2]["request_id"]})
    assert pending.status == 408 and pending.json()["type"] == "try_again"
    first = c.submit_fb(shuffled, 1, [data_a]).json()
    for f in [first, later[2], later[3], later[4]]:
        c.done(f["request_id"])
    assert weights_probe(c, shuffled, 5) == weights_probe(c, reference, 5)


def test_resend_returns_original_request_and_result(engine):
    c = Client(engine.url)
    sid = c.session()
    data = [datum(s) for s in corpus(2)]
    once = c.create_model(sid, 0, seed=5)
    c.forward_backward(once, 1, data)
    c.optim_step(once, 2)

    twice = c.create_model(sid, 1, seed=5)
    first = c.submit_fb(twice, 1, data).json()
    result = c.done(first["request_id"])
    again = c.submit_fb(twice, 1, data)
    assert again.status == 200 and again.json()["request_id"] == first["request_id"]
    assert c.done(again.json()["request_id"]) == result
    step = c.ok("optim_step", {"model_id": twice, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})
    step_again = c.ok("optim_step", {"model_id": twice, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})
    assert step_again["request_id"] == step["request_id"]
    c.done(step["request_id"])
    # Gradients and the Adam step were applied exactly once.
    assert weights_probe(c, twice, 3) == weights_probe(c, once, 3)


def test_reused_seq_id_with_different_payload_is_a_conflict(engine):
    c = Client(engine.url)
    sid = c.session()
    model = c.create_model(sid, 0)
    data_a, data_b = [datum(s) for s in corpus(2)]
    c.done(c.submit_fb(model, 1, [data_a]).json()["request_id"])
    r = c.submit_fb(model, 1, [data_b])
    assert r.status == 409 and "seq_id 1" in r.json()["detail"]
    r = c.post("optim_step", {"model_id": model, "seq_id": 1, "adam_params": {"learning_rate": 1e-3}})
    assert r.status == 409 and r.json()["detail"]

    # create_model is deduplicated by (session, model_seq_id) the same way.
    body = {"session_id": sid, "model_seq_id": 0, "base_model": "tiny-qwen3", "lora_config": {"rank": 4, "seed": 0}}
    assert c.ok("create_model", body)["model_id"] == model
    r = c.post("create_model", {**body, "lora_config": {"rank": 8}})
    assert r.status == 409 and r.json()["detail"]


def test_sampling_requests_are_deduplicated_per_sampler(engine):
    c = Client(engine.url)
    sid = c.session()
    sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 0,
                                               "base_model": "tiny-qwen3"})["sampling_session_id"]
    body = {"sampling_session_id": sampler, "seq_id": 0, "num_samples": 2,
            "prompt": {"chunks": [{"tokens": [10, 20, 30]}]}, "sampling_params": {"max_tokens": 5, "seed": 9}}
    first = c.ok("asample", body)
    assert c.ok("asample", body)["request_id"] == first["request_id"]
    result = c.done(first["request_id"])
    assert c.done(c.ok("asample", body)["request_id"]) == result
    r = c.post("asample", {**body, "sampling_params": {"max_tokens": 5, "seed": 10}})
    assert r.status == 409 and "seq_id 0" in r.json()["detail"]


def test_gradients_accumulate_until_optim_step_and_forward_never_touches_them(engine):
    c = Client(engine.url)
    sid = c.session()
    data_a, data_b = [datum(s) for s in corpus(2)]

    split = c.create_model(sid, 0, seed=2)
    c.forward_backward(split, 1, [data_a])
    c.forward_logprobs(split, 2, [data_b])  # forward only: no gradient
    c.forward_backward(split, 3, [data_b])
    c.optim_step(split, 4)

    joint = c.create_model(sid, 1, seed=2)
    c.forward_backward(joint, 1, [data_a, data_b])
    c.optim_step(joint, 2)

    a, b = weights_probe(c, split, 5), weights_probe(c, joint, 3)
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5

    untouched = c.create_model(sid, 2, seed=2)
    before = weights_probe(c, untouched, 1)
    c.optim_step(untouched, 2)  # nothing accumulated: a no-op
    assert weights_probe(c, untouched, 3) == before


def test_model_outlives_its_session(engine):
    c = Client(engine.url)
    model = c.create_model(c.session(), 0)
    # Another process with a new session (and no heartbeats from the first) keeps driving it.
    c.session()
    c.forward_backward(model, 1, [datum(corpus(1)[0])])
    c.optim_step(model, 2)
    info = c.ok("get_info", {"model_id": model})
    assert info["model_id"] == model and info["lora_rank"] == 4


def test_unload_fails_waiting_requests_and_forgets_the_model(engine):
    c = Client(engine.url)
    sid = c.session()
    model = c.create_model(sid, 0)
    waiting = c.submit_fb(model, 2, [datum(corpus(1)[0])]).json()  # seq 1 never comes
    unload = c.ok("unload_model", {"model_id": model})
    assert c.done(unload["request_id"])["model_id"] == model
    assert "unloaded" in c.result(waiting["request_id"])["error"]
    assert c.post("get_info", {"model_id": model}).status == 404
    runs = c.get("training_runs?limit=100").json()
    assert model in [r["training_run_id"] for r in runs["training_runs"]]


def test_capabilities_state_the_seq_id_guarantees(engine):
    caps = Client(engine.url).get("get_server_capabilities").json()
    assert caps["seq_id_guarantees"] == {"ordered": True, "deduplicated": True}


def test_ignore_seq_id_runs_every_arrival_once_in_arrival_order(engine, fresh_engine):
    """--ignore-seq-id: the engine behaves as SkyRL-tx (no ordering, no dedupe) and says nothing."""
    loose = Client(fresh_engine(None, "--ignore-seq-id").url)
    assert "seq_id_guarantees" not in loose.get("get_server_capabilities").json()
    sid = loose.session()
    data = [datum(s) for s in corpus(2)]
    model = loose.create_model(sid, 0, seed=5)
    first = loose.submit_fb(model, 1, data).json()
    again = loose.submit_fb(model, 1, data).json()  # a blind resend: a request of its own, run again
    assert again["request_id"] != first["request_id"]
    loose.done(first["request_id"])
    loose.done(again["request_id"])
    loose.done(loose.ok("optim_step", {"model_id": model, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})["request_id"])
    # seq 9 arrives before anything with a lower id and still runs at once.
    loose.done(loose.submit_fb(model, 9, data).json()["request_id"])
    counted = loose.get("debug/training_requests").json()["models"][model]
    assert [(r["type"], r["seq_id"]) for r in counted] == [("ForwardBackward", 1), ("ForwardBackward", 1), ("OptimStep", 2), ("ForwardBackward", 9)]

    loose.done(loose.ok("optim_step", {"model_id": model, "seq_id": 10, "adam_params": {"learning_rate": 1e-2}})["request_id"])

    # The first gradient was accumulated twice (Adam's first step hides a scale, its second does not).
    c = Client(engine.url)
    once = c.create_model(c.session(), 0, seed=5)
    for seq in (1, 3):
        c.forward_backward(once, seq, data)
        c.optim_step(once, seq + 1)
    assert weights_probe(loose, model, 11) != weights_probe(c, once, 5)
