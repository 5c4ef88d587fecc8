"""Continuous batching: requests that decode together get what they would get alone.

Greedy decoding pins the mechanics (left padding, masks, position ids, joins mid-flight, rows
retired one by one, separate batches per model): every token must equal solo generation, and
logprobs agree to float rounding. Seeded sampling is only checked for being well formed, since
its draws may flip where a batch changes a logit's last bits (see batching.py).
"""


import pytest
import torch

from http_client import Client, corpus, greedy_load_beside_training, side_by_side
from tinker_engine.base_models import BaseModelCache, ModelRegistry, instance_sharing_weights
from tinker_engine.batching import DecodeJob, DecodePool, batchable
from tinker_engine.lora import LoraSpec, attach_lora
from tinker_engine.sampler import SamplingParams, generate

DEVICE = torch.device("cpu")


@pytest.fixture(scope="module")
def models():
    spec = ModelRegistry().resolve("tiny-qwen3")
    cache = BaseModelCache(DEVICE, torch.float32)
    base = cache.model(spec)
    adapted = attach_lora(instance_sharing_weights(base), LoraSpec(rank=4, seed=3))
    with torch.no_grad():  # a non-zero adapter, so the two models really differ
        for name, p in adapted.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(len(name)))
    return spec, cache.tokenizer(spec), base, adapted


def run_pool(arrivals: dict, max_steps=500):
    """arrivals: decode step → jobs admitted before it. Returns when every job finished."""
    pool = DecodePool(DEVICE)
    last = max(arrivals)
    for step in range(max_steps):
        for j in arrivals.get(step, []):
            pool.admit(j)
        if not pool and step >= last:
            return step
        pool.step()
    raise AssertionError("pool did not drain")


def solo(model, prompt, n, params, spec, tokenizer):
    return generate(model, prompt, n, params, spec.eos_token_ids, tokenizer, DEVICE)["sequences"]


def test_greedy_rows_decode_as_they_would_alone(models):
    spec, tokenizer, base, adapted = models
    prompts = [p for p in corpus(6, 40)]
    cases = [  # (model, prompt, num_samples, max_tokens, arrival step)
        (base, prompts[0][:5], 1, 12, 0),
        (base, prompts[1][:31], 3, 20, 0),
        (adapted, prompts[2][:17], 2, 9, 0),
        (base, prompts[3][:2], 1, 25, 4),  # joins mid-flight with a shorter prompt than the batch's
        (adapted, prompts[4][:40], 1, 6, 7),  # longer prompt than the batch's
        (base, prompts[5][:11], 2, 1, 11),
    ]
    results: dict = {}
    arrivals: dict = {}
    for i, (model, prompt, n, max_tokens, at) in enumerate(cases):
        params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
        j = DecodeJob(model, prompt, n, params, [], tokenizer,
                      on_done=lambda r, i=i: results.__setitem__(i, r), on_error=lambda e: pytest.fail(repr(e)))
        arrivals.setdefault(at, []).append(j)
    run_pool(arrivals)
    assert sorted(results) == list(range(len(cases)))
    for i, (model, prompt, n, max_tokens, _) in enumerate(cases):
        expected = solo(model, prompt, n, SamplingParams(max_tokens=max_tokens, temperature=0.0), spec, tokenizer)
        got = results[i]["sequences"]
        assert len(got) == n
        for e, g in zip(expected, got):
            assert g["tokens"] == e["tokens"], f"case {i}"
            assert len(g["tokens"]) == max_tokens and g["stop_reason"] == "length"
            assert torch.allclose(torch.tensor(g["logprobs"]), torch.tensor(e["logprobs"]), atol=1e-4), f"case {i}"


def test_rows_stop_on_their_own_stop_conditions(models):
    spec, tokenizer, base, _ = models
    prompt = corpus(1, 20)[0]
    greedy = solo(base, prompt, 1, SamplingParams(max_tokens=10, temperature=0.0), spec, tokenizer)[0]["tokens"]
    results: dict = {}
    stop_at = SamplingParams(max_tokens=10, temperature=0.0, stop_tokens=[greedy[3]])
    runs_on = SamplingParams(max_tokens=10, temperature=0.0)
    text = tokenizer.decode(greedy[:5], skip_special_tokens=False)
    stop_string = SamplingParams(max_tokens=10, temperature=0.0, stop_strings=[text[-2:]] if len(text) >= 2 else [])
    arrivals = {0: [
        DecodeJob(base, prompt, 1, p, [], tokenizer, on_done=lambda r, k=k: results.__setitem__(k, r),
                  on_error=lambda e: pytest.fail(repr(e)))
        for k, p in enumerate([stop_at, runs_on, stop_string])
    ]}
    run_pool(arrivals)
    first = greedy.index(greedy[3])
    assert results[0]["sequences"][0] == {**results[0]["sequences"][0], "tokens": greedy[: first + 1], "stop_reason": "stop"}
    assert results[1]["sequences"][0]["tokens"] == greedy and results[1]["sequences"][0]["stop_reason"] == "length"
    expected = solo(base, prompt, 1, stop_string, spec, tokenizer)[0]
    assert results[2]["sequences"][0]["tokens"] == expected["tokens"]
    assert results[2]["sequences"][0]["stop_reason"] == expected["stop_reason"]


def test_seeded_rows_keep_their_own_generators(models):
    """The same seeded request twice in one batch draws the same tokens (its draws do not depend
    on the rows around it), different seeds draw differently, and rows with other sampling
    parameters (top-k, greedy) between them draw with their own."""
    spec, tokenizer, base, _ = models
    prompt = corpus(1, 16)[0]
    results: dict = {}
    greedy = SamplingParams(max_tokens=8, temperature=0.0)
    params = [SamplingParams(max_tokens=8, temperature=1.0, seed=s) for s in (5, 5, 6)] + [greedy]
    params.insert(1, SamplingParams(max_tokens=8, temperature=0.7, top_k=50, seed=5))
    arrivals = {0: [
        DecodeJob(base, prompt, 2, p, [], tokenizer, on_done=lambda r, k=k: results.__setitem__(k, r),
                  on_error=lambda e: pytest.fail(repr(e)))
        for k, p in enumerate(params)
    ]}
    run_pool(arrivals)
    tokens = {k: [s["tokens"] for s in results[k]["sequences"]] for k in results}
    assert tokens[0] == tokens[2]
    assert tokens[0] != tokens[3] and tokens[0] != tokens[1]
    assert tokens[0][0] != tokens[0][1]  # samples of one request have their own seeds
    # Rows with other sampling parameters in the same batch draw with their own.
    assert tokens[4] == [s["tokens"] for s in solo(base, prompt, 2, greedy, spec, tokenizer)]
    top_k = torch.topk(solo_logits(base, prompt), 50).indices.tolist()
    assert all(t[0] in top_k for t in tokens[1])


def solo_logits(model, prompt):
    with torch.no_grad():
        return model(input_ids=torch.tensor([prompt])).logits[0, -1]


def test_a_failing_prefill_fails_only_its_request(models):
    spec, tokenizer, base, _ = models
    results, errors = {}, {}
    good = DecodeJob(base, corpus(1, 8)[0], 1, SamplingParams(max_tokens=4, temperature=0.0), [], tokenizer,
                     on_done=lambda r: results.__setitem__("good", r), on_error=lambda e: errors.__setitem__("good", e))
    bad = DecodeJob(base, [10**9], 1, SamplingParams(max_tokens=4, temperature=0.0), [], tokenizer,
                    on_done=lambda r: results.__setitem__("bad", r), on_error=lambda e: errors.__setitem__("bad", e))
    run_pool({0: [good, bad]})
    assert "good" in results and set(errors) == {"bad"}


def test_tiny_models_are_batchable(models):
    _, _, base, adapted = models
    assert batchable(base) and batchable(adapted)


def test_engine_serves_concurrent_requests_in_one_batch(fresh_engine, tmp_path):
    """Over HTTP: concurrent greedy requests to an engine with --continuous-batching answer what
    an engine without it answers; training requests interleave with the decoding."""
    batched = Client(fresh_engine(tmp_path / "batched", "--continuous-batching").url)
    plain = Client(fresh_engine(tmp_path / "plain").url)
    prompts = corpus(6, 30)

    out = side_by_side({"b": batched, "p": plain}, lambda c: greedy_load_beside_training(c, prompts)[0])
    assert len(out["b"]) == len(prompts)
    for got, expected in zip(out["b"], out["p"]):
        assert [s["tokens"] for s in got] == [s["tokens"] for s in expected]
        assert [s["stop_reason"] for s in got] == [s["stop_reason"] for s in expected]
