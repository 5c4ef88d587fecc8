"""The fast sampler (fast_decode.py) against the reference path (sampler.generate).

Greedy decoding pins the mechanics — fused projections, unmerged float32 LoRA, batched prefill of
right-padded prompts, slot cache with rows retired and moved down, joins mid-flight, separate
lanes per snapshot, stop conditions: every token must equal the reference path's and logprobs
agree to float rounding. Seeded sampling is pinned by its own contract: a sample's draws depend
only on (seed, sample index, token index), never on the batch around it. The CUDA tests (graph
capture and replay) run wherever CUDA is present.
"""


import pytest
import torch

from devices import DEVICES
from http_client import Client, corpus, datum, greedy_load_beside_training, side_by_side
from tinker_engine import fast_decode
from tinker_engine.base_models import BaseModelCache, ModelRegistry, instance_sharing_weights
from tinker_engine.fast_decode import (
    MIN_LENGTH_BUCKET, BaseWeights, FastJob, FastSampler, counter_uniform, decode_bucket, draw_rows, filter_rows,
    length_bucket, unsupported_reason,
)
from tinker_engine.lora import LoraSpec, attach_lora
from tinker_engine.sampler import SamplingParams, _filter_logits, generate


def build_models(device: str):
    spec = ModelRegistry().resolve("tiny-qwen3")
    cache = BaseModelCache(torch.device(device), torch.float32)
    base = cache.model(spec)
    adapted = attach_lora(instance_sharing_weights(base), LoraSpec(rank=4, seed=3))
    with torch.no_grad():  # a non-zero adapter, so the two models really differ
        for name, p in adapted.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator(device=p.device).manual_seed(len(name)))
    return spec, cache.tokenizer(spec), base, adapted


@pytest.fixture(scope="module", params=DEVICES)
def models(request):
    return (request.param, *build_models(request.param))


def job(base, snapshot, prompt, n, params, spec, tokenizer, results, key, fallback=None):
    return FastJob(
        ("snap", id(snapshot)) if snapshot is not None else ("base",), base,
        (lambda: snapshot) if snapshot is not None else None, prompt, n, params, spec.eos_token_ids, tokenizer,
        on_done=lambda r: results.__setitem__(key, r), on_error=lambda e: pytest.fail(repr(e)),
        fallback=fallback or (lambda: pytest.fail("unexpected fallback")),
    )


def run(sampler: FastSampler, arrivals: dict, max_steps=500):
    """arrivals: decode step → jobs submitted before it. Returns when every job finished."""
    last = max(arrivals)
    for step in range(max_steps):
        for j in arrivals.get(step, []):
            sampler.submit(j)
        if not sampler and step >= last:
            return
        sampler.step()
    raise AssertionError("sampler did not drain")


def reference(model, prompt, n, params, spec, tokenizer, device):
    return generate(model, prompt, n, params, spec.eos_token_ids, tokenizer, torch.device(device))["sequences"]


def test_tiny_models_take_the_fast_path(models):
    _, _, _, base, adapted = models
    assert unsupported_reason(base) is None and unsupported_reason(adapted) is None


def test_greedy_rows_decode_as_the_reference_path(models):
    device, spec, tokenizer, base, adapted = models
    prompts = corpus(7, 40)
    cases = [  # (snapshot, prompt, num_samples, max_tokens, arrival step)
        (None, prompts[0][:5], 1, 12, 0),
        (None, prompts[1][:31], 3, 20, 0),
        (adapted, prompts[2][:17], 2, 9, 0),
        (None, prompts[3][:2], 1, 25, 4),  # joins mid-flight, shorter prompt than the batch's
        (adapted, prompts[4][:40], 1, 6, 7),  # longer prompt than the lane's rows
        (None, prompts[5][:11], 2, 1, 11),
        (adapted, prompts[6][:3], 4, 30, 2),  # outlives rows retired before it (slots move down)
    ]
    results: dict = {}
    arrivals: dict = {}
    for i, (snapshot, prompt, n, max_tokens, at) in enumerate(cases):
        params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
        arrivals.setdefault(at, []).append(job(base, snapshot, prompt, n, params, spec, tokenizer, results, i))
    sampler = FastSampler(device, 1 << 30)
    run(sampler, arrivals)
    assert sorted(results) == list(range(len(cases)))
    for i, (snapshot, prompt, n, max_tokens, _) in enumerate(cases):
        params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
        expected = reference(snapshot if snapshot is not None else base, prompt, n, params, spec, tokenizer, device)
        got = results[i]["sequences"]
        assert len(got) == n
        for e, g in zip(expected, got):
            assert g["tokens"] == e["tokens"], f"case {i}"
            assert len(g["tokens"]) == max_tokens and g["stop_reason"] == "length"
            assert torch.allclose(torch.tensor(g["logprobs"]), torch.tensor(e["logprobs"]), atol=1e-4), f"case {i}"
    if device == "cuda":
        assert any(lane.graphs for lane in sampler.lanes + sampler.idle), "decode steps should replay CUDA graphs"


def test_rows_stop_on_their_own_stop_conditions(models):
    device, spec, tokenizer, base, _ = models
    prompt = corpus(1, 20)[0]
    greedy = reference(base, prompt, 1, SamplingParams(max_tokens=10, temperature=0.0), spec, tokenizer, device)[0]
    text = tokenizer.decode(greedy["tokens"][:5], skip_special_tokens=False)
    cases = [
        SamplingParams(max_tokens=10, temperature=0.0, stop_tokens=[greedy["tokens"][3]]),
        SamplingParams(max_tokens=10, temperature=0.0),
        SamplingParams(max_tokens=10, temperature=0.0, stop_strings=[text[-2:]] if len(text) >= 2 else []),
        SamplingParams(max_tokens=0, temperature=0.0),
    ]
    results: dict = {}
    run(FastSampler(device, 1 << 30), {0: [job(base, None, prompt, 1, p, spec, tokenizer, results, k)
                                           for k, p in enumerate(cases)]})
    for k, params in enumerate(cases):
        expected = reference(base, prompt, 1, params, spec, tokenizer, device)[0]
        got = results[k]["sequences"][0]
        assert got["tokens"] == expected["tokens"] and got["stop_reason"] == expected["stop_reason"], f"case {k}"
    assert results[0]["sequences"][0]["stop_reason"] == "stop"


def test_seeded_draws_depend_on_the_seed_alone(models):
    """A seeded request draws the same tokens alone, in a crowd, and in another order; other seeds,
    and the samples of one request, draw differently; top-k rows keep to their top k."""
    device, spec, tokenizer, base, adapted = models
    prompt = corpus(1, 16)[0]
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=5)

    def tokens_of(jobs_params, snapshot=None):
        results: dict = {}
        jobs = [job(base, snapshot, prompt, 3, p, spec, tokenizer, results, k) for k, p in enumerate(jobs_params)]
        run(FastSampler(device, 1 << 30), {0: jobs})
        return {k: [s["tokens"] for s in results[k]["sequences"]] for k in results}

    alone = tokens_of([params])[0]
    crowd = tokens_of([SamplingParams(max_tokens=20, temperature=0.7, top_k=50, seed=1), params,
                       SamplingParams(max_tokens=3, seed=6), SamplingParams(max_tokens=8, temperature=0.0)])
    assert crowd[1] == alone
    assert crowd[2][0] != alone[0][:3]
    assert alone[0] != alone[1]  # samples of one request have their own seeds
    with torch.no_grad():
        top = torch.topk(base(input_ids=torch.tensor([prompt], device=device)).logits[0, -1], 50).indices.tolist()
    assert all(t[0] in top for t in crowd[0])
    assert tokens_of([params], adapted)[0] != alone  # the adapter changes the distribution


def test_row_filters_match_the_reference_filter():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 1000, generator=g) * 3
    logits[2, :10] = 5.0  # ties at the k-th value
    top_k = torch.tensor([-1, 5, 10, 0, 1000, 3])
    top_p = torch.tensor([0.9, 1.0, 0.5, 0.3, 1.0, 0.99])
    got = filter_rows(logits, top_k, top_p)
    for i in range(6):
        expected = _filter_logits(logits[i : i + 1], int(top_k[i]), float(top_p[i]))[0]
        assert torch.equal(torch.isinf(got[i]), torch.isinf(expected)), f"row {i}"
        assert torch.equal(got[i][~torch.isinf(got[i])], expected[~torch.isinf(expected)])


def test_draws_at_temperature_one_take_the_short_path_to_the_same_tokens_and_logprobs():
    """Rows that all draw from the model's own distribution skip the scaled copy and the softmax:
    the same tokens and logprobs as the general path, which a temperature of 1.0 must not change."""
    g = torch.Generator().manual_seed(1)
    rows = 64
    logits = torch.randn(rows, 5000, generator=g) * 4
    args = (logits, torch.ones(rows), torch.full((rows,), -1), torch.ones(rows), torch.arange(rows) * 7919 + 3,
            torch.arange(rows) % 9)
    general = draw_rows(*args, False, False)
    short = draw_rows(*args, False, False, True)
    assert torch.equal(short[0], general[0])
    assert torch.equal(short[1], general[1])
    expected = torch.log_softmax(logits, dim=-1).gather(1, general[0][:, None])[:, 0]
    assert torch.allclose(short[1], expected, atol=1e-5)


def test_counter_uniform_is_a_pure_function_of_key_and_count():
    keys = torch.tensor([0, 1, 2**62 + 12345, 7] * 2500)
    counts = torch.arange(10_000)
    u = counter_uniform(keys, counts)
    assert u.dtype == torch.float32 and bool((u >= 0).all()) and bool((u < 1).all())
    assert torch.equal(u, counter_uniform(keys.clone(), counts.clone()))
    assert abs(float(u.mean()) - 0.5) < 0.01 and abs(float(u.var()) - 1 / 12) < 0.005
    same_count = counter_uniform(torch.arange(1000), torch.zeros(1000, dtype=torch.long))
    assert len(set(same_count.tolist())) > 990


def test_a_lane_keeps_decoding_right_when_another_lane_grows_the_rope_tables(models):
    """A captured decode graph reads fixed addresses, so a lane holds the rope tables it was built
    with: a later, longer lane of the same base grows the base's tables without freeing them, and
    the first lane's rows go on decoding exactly as the reference path (on CUDA, through replays
    of the graphs captured before the growth)."""
    device, spec, tokenizer, base, adapted = models
    sampler = FastSampler(device, 1 << 30)
    short_prompt, long_prompt = corpus(1, 6)[0], corpus(1, 300, offset=600)[0]
    params_short = SamplingParams(max_tokens=40, temperature=0.0)
    params_long = SamplingParams(max_tokens=5, temperature=0.0)
    results: dict = {}
    run(sampler, {
        0: [job(base, None, short_prompt, 2, params_short, spec, tokenizer, results, "short")],
        3: [job(base, adapted, long_prompt, 1, params_long, spec, tokenizer, results, "long")],
    })
    tables = {id(lane): lane.rope for lane in sampler.lanes + sampler.idle}
    assert len(tables) == 2 and len({id(t[0]) for t in tables.values()}) == 2, "each lane holds its own tables"
    for key, model, prompt, n, params in (("short", base, short_prompt, 2, params_short),
                                          ("long", adapted, long_prompt, 1, params_long)):
        expected = reference(model, prompt, n, params, spec, tokenizer, device)
        assert [s["tokens"] for s in results[key]["sequences"]] == [s["tokens"] for s in expected], key


def test_decode_buckets_pad_a_step_by_at_most_a_quarter_with_four_buckets_per_octave():
    for floor, top in ((8, 512), (MIN_LENGTH_BUCKET, 8192)):
        buckets = [decode_bucket(n, floor) for n in range(1, top + 1)]
        assert all(b >= n for n, b in enumerate(buckets, 1)) and buckets == sorted(buckets)
        assert all(b - n <= max(n // 4, floor - 1) for n, b in enumerate(buckets, 1))
    assert sorted({decode_bucket(n, 8) for n in range(1, 513)}) == [
        1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512]
    assert [length_bucket(n) for n in (1, 64, 65, 129, 300, 513, 4000)] == [64, 64, 128, 192, 320, 640, 4096]
    assert len({length_bucket(n) for n in range(1, 4097)}) == 20  # powers of two: 7


def greedy_after_capture(device: str, sampler: FastSampler) -> dict:
    """Three greedy requests, two lanes, one arriving mid-flight; asserts every token is the
    reference path's and returns the results."""
    spec, tokenizer, base, adapted = build_models(device)
    prompts = corpus(3, 12)
    params = SamplingParams(max_tokens=7, temperature=0.0)
    results: dict = {}
    run(sampler, {0: [job(base, None, prompts[0], 2, params, spec, tokenizer, results, 0),
                      job(base, adapted, prompts[1], 1, params, spec, tokenizer, results, 1)],
                  3: [job(base, None, prompts[2], 1, params, spec, tokenizer, results, 2)]})
    for k, (model, prompt, n) in enumerate([(base, prompts[0], 2), (adapted, prompts[1], 1), (base, prompts[2], 1)]):
        expected = reference(model, prompt, n, params, spec, tokenizer, device)
        assert [s["tokens"] for s in results[k]["sequences"]] == [s["tokens"] for s in expected], k
    return results


def no_graphs_left(sampler: FastSampler) -> bool:
    return not sampler.use_graphs and not any(lane.use_graphs or lane.graphs for lane in sampler.lanes + sampler.idle)


@pytest.mark.skipif(torch.cuda.is_available(), reason="premise holds without CUDA only: where CUDA is present, "
                    "capturing a step of CPU tensors succeeds (an empty graph, whose replays decode nothing); "
                    "the CUDA tests below force a failure instead")
def test_a_failed_graph_capture_leaves_the_sampler_decoding_eagerly_and_right():
    """Where capturing a decode step fails (here: graphs asked for on a machine without CUDA), the
    step decodes eagerly instead, the sampler stops trying graphs, and every token is still the
    reference path's: a capture problem costs speed, never requests."""
    sampler = FastSampler("cpu", 1 << 30)
    sampler.use_graphs = True
    greedy_after_capture("cpu", sampler)
    assert no_graphs_left(sampler)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only: graph capture")
def test_decode_steps_replay_cuda_graphs_and_give_the_eager_tokens():
    """On CUDA a capture succeeds: steps replay graphs, which pad a step to its bucket (other GEMM
    shapes, so logprobs agree to float rounding) and decode the tokens eager steps decode."""
    graphs = FastSampler("cuda", 1 << 30)
    with_graphs = greedy_after_capture("cuda", graphs)
    assert graphs.use_graphs and any(lane.graphs for lane in graphs.lanes + graphs.idle), "no graph was captured"
    eager = FastSampler("cuda", 1 << 30)
    eager.use_graphs = False
    without = greedy_after_capture("cuda", eager)
    for k in with_graphs:
        assert [s["tokens"] for s in with_graphs[k]["sequences"]] == [s["tokens"] for s in without[k]["sequences"]]
        for g, e in zip(with_graphs[k]["sequences"], without[k]["sequences"]):
            assert torch.allclose(torch.tensor(g["logprobs"]), torch.tensor(e["logprobs"]), atol=1e-4), k


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only: graph capture")
def test_a_failed_graph_capture_on_cuda_leaves_the_sampler_decoding_eagerly_and_right(monkeypatch):
    """As on CPU, for a capture that fails on CUDA (forced here; in practice out of memory or an
    operator that cannot be captured): eager decoding from then on, the reference path's tokens."""
    tries = []

    def failing_capture(lane, batch, length):
        tries.append((batch, length))
        raise RuntimeError("capture failed (forced by the test)")

    monkeypatch.setattr(fast_decode._Lane, "_capture", failing_capture)
    sampler = FastSampler("cuda", 1 << 30)
    assert sampler.use_graphs
    greedy_after_capture("cuda", sampler)
    assert len(tries) == 1, "after one failure no lane tries again"
    assert no_graphs_left(sampler)


@pytest.mark.parametrize("name", ["tiny-qwen3", "tiny-llama3"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_decode_norms_are_the_models_norms_fused(name, dtype):
    device = DEVICES[-1]
    base = BaseModelCache(torch.device(device), dtype).model(ModelRegistry().resolve(name))
    weights = BaseWeights(base)
    decoder = base.get_decoder()
    pairs = [(decoder.norm, weights.norm)]
    for layer, fused in zip(decoder.layers, weights.layers):
        pairs += [(layer.input_layernorm, fused["ln1"]), (layer.post_attention_layernorm, fused["ln2"])]
        if getattr(layer.self_attn, "q_norm", None) is not None:
            pairs += [(layer.self_attn.q_norm, fused["q_norm"]), (layer.self_attn.k_norm, fused["k_norm"])]
    generator = torch.Generator().manual_seed(0)
    for module, fused in pairs:
        assert fused is not module, type(module).__name__
        with torch.no_grad():
            module.weight.copy_(torch.rand(module.weight.shape, generator=generator) * 2)  # not all ones
            x = (torch.randn(7, 3, module.weight.shape[0], generator=generator) * 4).to(device, dtype)
            expected, got = module(x), fused(x)
        assert got.dtype == expected.dtype
        # float32: the same statistics and products; bfloat16: the weight is applied before rounding.
        rtol = 1e-6 if dtype == torch.float32 else 2 ** -7
        torch.testing.assert_close(got.float(), expected.float(), rtol=rtol, atol=1e-6)


# Operators that deterministic mode runs through a sort of their indices on CUDA (in case some
# repeat): several kernels each, in a step that is otherwise a few kernels per layer.
SORTING_UNDER_DETERMINISM = {"aten::index_copy_", "aten::index_copy", "aten::index_put_", "aten::_index_put_impl_",
                             "aten::scatter_", "aten::scatter", "aten::scatter_add_", "aten::index_add_"}


def test_a_decode_step_writes_its_cache_without_operators_that_sort_under_determinism(models):
    device, spec, tokenizer, base, adapted = models
    sampler = FastSampler(device, 1 << 30)
    sampler.use_graphs = False  # eager, so that the profiler sees the operators a graph would hold
    results: dict = {}
    params = SamplingParams(max_tokens=20, temperature=1.0, seed=1)
    for k, prompt in enumerate(corpus(3, 9)):
        sampler.submit(job(base, adapted, prompt[: 5 + k], 1, params, spec, tokenizer, results, k))
    sampler.step()
    lane = sampler.lanes[0]
    from torch.profiler import profile

    with profile() as prof:
        lane.decode(len(lane.rows), max(r.position for r in lane.rows))
    names = {e.name for e in prof.events()}
    assert "aten::put_" in names, "the cache writes are put_"
    assert not names & SORTING_UNDER_DETERMINISM
    run(sampler, {0: []})
    assert sorted(results) == [0, 1, 2]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only: stream synchronisation")
def test_a_step_between_row_changes_waits_for_its_own_draws_alone():
    """A decode step is queued before the host reads the step's draws, so the device decodes while
    the host records them and checks stop conditions. Any stream or device sync in such a step
    (a blocking upload, an .item()) would idle the device again: torch's sync debug mode raises on
    one. Rows here never stop: the test after this one checks steps where rows change."""
    spec, tokenizer, base, adapted = build_models("cuda")
    sampler = FastSampler("cuda", 1 << 30)
    failures: list = []
    for i, prompt in enumerate(corpus(4, 10)):
        sampler.submit(FastJob(("snap", 1), base, lambda: adapted, prompt, 1, SamplingParams(max_tokens=40, seed=i),
                               [], tokenizer, on_done=failures.append, on_error=failures.append,
                               fallback=lambda: failures.append("fallback")))
    for _ in range(3):  # admission, graph capture: both synchronise
        sampler.step()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(5):
            sampler.step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert not failures and len(sampler.lanes[0].rows) == 4
    assert all(len(r.job.tokens[0]) == 8 for r in sampler.lanes[0].rows)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only: stream synchronisation")
def test_steps_where_rows_retire_and_requests_join_queue_no_sync():
    """Rows that stop move others down the cache and rebuild the per-row state; a request that
    arrives is prefilled and copied to its samples' slots. Their uploads go through pinned memory,
    so none of these steps makes the host wait for the device either."""
    spec, tokenizer, base, adapted = build_models("cuda")
    sampler = FastSampler("cuda", 1 << 30)
    sampler.use_graphs = False  # a capture synchronises (once per bucket); this test is about uploads
    results: dict = {}
    prompts = corpus(6, 10)

    def submit(k, max_tokens, n=1):
        sampler.submit(job(base, adapted, prompts[k], n, SamplingParams(max_tokens=max_tokens, seed=k), spec,
                           tokenizer, results, k))

    for k, max_tokens in enumerate((6, 7, 9, 30)):
        submit(k, max_tokens)
    sampler.step()  # the first admission creates the lane, which waits for the adapter's copy
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step in range(12):
            if step == 2:
                submit(4, 5, n=3)  # prefill and slot copies mid-flight
            sampler.step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert sorted(results) == [0, 1, 2, 4] and len(sampler.lanes[0].rows) == 1


def test_a_request_larger_than_the_cache_budget_takes_the_reference_path(models):
    device, spec, tokenizer, base, _ = models
    fell_back, results = [], {}
    params = SamplingParams(max_tokens=4, temperature=0.0)
    j = job(base, None, corpus(1, 8)[0], 1, params, spec, tokenizer, results, 0, fallback=lambda: fell_back.append(1))
    run(FastSampler(device, 1 << 10), {0: [j]})  # 1 KiB: not even one row fits
    assert fell_back == [1] and not results


def test_requests_wait_for_room_when_the_cache_is_full(models):
    """With room for one lane's rows only, later requests wait for earlier rows to retire and
    still decode exactly as the reference path."""
    device, spec, tokenizer, base, adapted = models
    sampler = FastSampler(device, 1 << 30, max_slots=4)
    prompts = corpus(3, 12)
    results: dict = {}
    params = SamplingParams(max_tokens=6, temperature=0.0)
    run(sampler, {0: [job(base, None, p, 3, params, spec, tokenizer, results, k) for k, p in enumerate(prompts)]})
    for k, p in enumerate(prompts):
        expected = reference(base, p, 3, params, spec, tokenizer, device)
        assert [s["tokens"] for s in results[k]["sequences"]] == [s["tokens"] for s in expected]


def test_engine_fast_sampler_answers_like_the_reference_sampler_beside_training(fresh_engine, tmp_path):
    """Over HTTP: an engine with --sampler fast answers concurrent greedy requests exactly like one
    with the reference sampler, while training requests run on the other thread; seeded requests
    repeat their tokens exactly."""
    # float32 on every device: this pins the mechanics token for token (the engine's own dtype is
    # checked against full forwards below, with a tolerance for its rounding).
    fast = Client(fresh_engine(tmp_path / "fast", "--sampler", "fast", "--dtype", "float32").url)
    plain = Client(fresh_engine(tmp_path / "plain", "--sampler", "reference", "--dtype", "float32").url)
    prompts = corpus(6, 30)

    out = side_by_side({"f": fast, "p": plain}, lambda c: greedy_load_beside_training(c, prompts, seeded=2))
    (got, seeded), (expected, _) = out["f"], out["p"]
    assert len(got) == len(prompts)
    for g, e in zip(got, expected):
        assert [s["tokens"] for s in g] == [s["tokens"] for s in e]
        assert [s["stop_reason"] for s in g] == [s["stop_reason"] for s in e]
        for gs, es in zip(g, e):
            assert torch.allclose(torch.tensor(gs["logprobs"]), torch.tensor(es["logprobs"]), atol=1e-4)
    # A seeded request repeats its tokens exactly; its logprobs only to float rounding, since the
    # repeat may share a decode batch of another size (another GEMM reduction order).
    first, again = seeded
    assert [(s["tokens"], s["stop_reason"]) for s in first] == [(s["tokens"], s["stop_reason"]) for s in again]
    for a, b in zip(first, again):
        assert torch.allclose(torch.tensor(a["logprobs"]), torch.tensor(b["logprobs"]), atol=1e-5)


@pytest.mark.parametrize("dtype,mean_tol,max_tol", [("float32", 1e-5, 1e-4), ("bfloat16", 0.03, 0.25)])
def test_fast_sampler_logprobs_are_those_of_full_forwards_in_the_engines_dtype(fresh_engine, tmp_path, dtype,
                                                                                mean_tol, max_tol):
    """Seeded samples of a trained adapter, decoded in one batch on the fast path (bf16 base weights
    are the CUDA default), carry the logprobs that a full forward of the reference path gives their
    tokens — exactly up to float32 rounding, or within bf16 rounding of two kernel orders."""
    c = Client(fresh_engine(tmp_path / "data", "--sampler", "fast", "--dtype", dtype).url)
    model = c.create_model(c.session(), 0, seed=5)
    c.forward_backward(model, 1, [datum(t) for t in corpus(2)])
    c.optim_step(model, 2, lr=5e-2)
    sampler = c.done(c.ok("save_weights_for_sampler", {
        "model_id": model, "seq_id": 3, "sampling_session_seq_id": 0})["request_id"])["sampling_session_id"]
    prompts = [p[: 4 + 5 * i] for i, p in enumerate(corpus(3, 16))]
    ids = [c.ok("asample", {
        "sampling_session_id": sampler, "seq_id": i, "num_samples": 3, "prompt": {"chunks": [{"tokens": p}]},
        "sampling_params": {"max_tokens": 24, "seed": 40 + i, "temperature": 1.0},
    })["request_id"] for i, p in enumerate(prompts)]
    gaps = []
    for i, (p, r) in enumerate(zip(prompts, ids)):
        for seq in c.done(r)["sequences"]:
            assert len(seq["tokens"]) == len(seq["logprobs"]) > 0
            full = c.done(c.ok("asample", {
                "sampling_session_id": sampler, "seq_id": 100 + len(gaps), "num_samples": 1, "prompt_logprobs": True,
                "prompt": {"chunks": [{"tokens": p + seq["tokens"]}]}, "sampling_params": {"max_tokens": 1, "seed": 0},
            })["request_id"])["prompt_logprobs"][len(p):]
            gaps.extend(abs(a - b) for a, b in zip(seq["logprobs"], full))
    gaps_t = torch.tensor(gaps)
    assert gaps_t.mean() <= mean_tol and gaps_t.max() <= max_tol, (dtype, gaps_t.mean().item(), gaps_t.max().item())
