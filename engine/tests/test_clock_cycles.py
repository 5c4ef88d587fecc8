"""Emulated clock cycles (--clock-cycle-ms): training work runs at cycle boundaries (raw HTTP).

Timing assertions use the engine's own clock, read from healthz (`clock_cycles.clock_ms`), mapped
onto this process's monotonic clock; tolerances are generous (2 CPU cores, other processes).
"""

import math
import time

import pytest

from conftest import EngineProcess
from http_client import Client, corpus, datum

CYCLE_MS = 400
PERIOD = CYCLE_MS / 1000
SLACK = 0.02  # how early a completion may look because of the clock mapping (seconds)


@pytest.fixture(scope="module")
def clocked(tmp_path_factory):
    proc = EngineProcess(tmp_path_factory.mktemp("clocked") / "data", "--clock-cycle-ms", str(CYCLE_MS)).start()
    yield proc
    proc.stop()


def clock(c: Client) -> dict:
    r = c.get("healthz")
    assert r.status == 200
    return r.json()["clock_cycles"]


def clock_origin(c: Client) -> float:
    """The engine clock's zero on this process's time.monotonic() (to within half a round trip)."""
    before = time.monotonic()
    info = clock(c)
    after = time.monotonic()
    assert info["cycle_ms"] == CYCLE_MS
    return (before + after) / 2 - info["clock_ms"] / 1000


def just_after_boundary(origin: float, delay: float = 0.03) -> float:
    """Sleeps until `delay` after the next boundary; returns that boundary (local monotonic time)."""
    boundary = origin + (math.floor((time.monotonic() - origin) / PERIOD) + 1) * PERIOD
    time.sleep(boundary + delay - time.monotonic())
    return boundary


def data():
    return [datum(corpus(1, 16)[0])]


def submit_step(c: Client, model: str, seq: int) -> list:
    """forward_backward (seq) + optim_step (seq + 1), without waiting; their request ids."""
    fb = c.submit_fb(model, seq, data())
    assert fb.status == 200, fb.raw
    optim = c.ok("optim_step", {"model_id": model, "seq_id": seq + 1, "adam_params": {"learning_rate": 1e-2}})
    return [fb.json()["request_id"], optim["request_id"]]


def outcome(c: Client, model: str, ids: list) -> list:
    """Results of the given requests, then a forward-only probe of the weights (next seq id)."""
    results = [c.done(r) for r in ids]
    return results + [c.forward_logprobs(model, len(ids) + 1, [datum(corpus(1, 30, 900)[0])])]


def engine_ms(origin: float, local: float) -> float:
    """A local monotonic time on the engine's clock (ms)."""
    return (local - origin) * 1000


def later_cycle(first: dict, then: dict) -> bool:
    """Whether the last cycle with work in `then` began at a later boundary than that in `first`
    (start times are boundaries plus the timer's lateness, so half a cycle tells them apart)."""
    return then["last_work_cycle_ms"] >= first["last_work_cycle_ms"] + CYCLE_MS / 2


def test_off_by_default(engine):
    assert clock(Client(engine.url)) == {"cycle_ms": 0}


def test_work_waits_for_the_next_boundary(clocked):
    c = Client(clocked.url)
    model = c.create_model(c.session(), 0)  # model creation is not held
    c.forward_backward(model, 1, data())  # warm-up
    origin = clock_origin(c)
    boundary = just_after_boundary(origin)
    next_ms = (round((boundary - origin) / PERIOD) + 1) * CYCLE_MS
    before = clock(c)
    request_id = c.submit_fb(model, 2, data()).json()["request_id"]
    held = clock(c)
    assert held["clock_ms"] < next_ms, "test too slow to observe the held request"
    assert held["held"] == 1 and not held["executing"], held  # waiting for the boundary
    c.done(request_id)
    done_ms = engine_ms(origin, time.monotonic())
    after = clock(c)
    print(f"boundary at {next_ms} ms, cycle began at {after['last_work_cycle_ms']} ms, result at {done_ms:.0f} ms")
    assert done_ms >= next_ms - SLACK * 1000, "completed before the boundary"
    # Run by the cycle of that very boundary (the engine's timer may fire a little late under load).
    assert next_ms - 1 <= after["last_work_cycle_ms"] < next_ms + 250
    assert after["cycles_with_work"] == before["cycles_with_work"] + 1
    assert after["ops"] == before["ops"] + 1 and after["held"] == 0 and after["cycles"] > before["cycles"]

    # A request that arrives while a cycle executes waits for the next boundary.
    just_after_boundary(origin)
    heavy = c.submit_fb(model, 3, [datum(s) for s in corpus(8, 64)]).json()["request_id"]
    deadline = time.monotonic() + PERIOD + 5
    while not (running := clock(c))["executing"]:
        assert time.monotonic() < deadline, "the cycle never started"
        time.sleep(0.01)
    light = c.submit_fb(model, 4, data()).json()["request_id"]
    during = clock(c)
    assert during["executing"] and during["last_work_cycle_ms"] == running["last_work_cycle_ms"], \
        "the heavy cycle ended before the second request arrived"
    assert during["held"] == 1
    c.done(heavy)
    c.done(light)
    after = clock(c)
    assert after["cycles_with_work"] == running["cycles_with_work"] + 1
    assert later_cycle(running, after)


def test_submitting_ahead_saves_a_cycle_per_step(clocked):
    c = Client(clocked.url)
    sid = c.session()
    ahead, behind = c.create_model(sid, 0, seed=2), c.create_model(sid, 1, seed=2)
    origin = clock_origin(c)

    # Steps N and N+1 queued back to back: one cycle runs both.
    boundary = just_after_boundary(origin)
    work_before = clock(c)["cycles_with_work"]
    ids_ahead = submit_step(c, ahead, 1) + submit_step(c, ahead, 3)
    results_ahead = [c.done(r) for r in ids_ahead]
    took_ahead = time.monotonic() - boundary
    cycles_ahead = clock(c)["cycles_with_work"] - work_before

    # Step N+1 submitted only once step N's results are back: it waits for a later cycle.
    boundary = just_after_boundary(origin)
    work_before = clock(c)["cycles_with_work"]
    results_behind = [c.done(r) for r in submit_step(c, behind, 1)]
    step_n = clock(c)
    results_behind += [c.done(r) for r in submit_step(c, behind, 3)]
    took_behind = time.monotonic() - boundary
    step_n1 = clock(c)
    cycles_behind = step_n1["cycles_with_work"] - work_before

    print(f"submit ahead: {took_ahead:.3f} s, {cycles_ahead} cycle(s); "
          f"after results: {took_behind:.3f} s, {cycles_behind} cycles (cycle {PERIOD} s)")
    # Wall times depend on the machine's load; the cycle counts and start times do not.
    assert cycles_ahead == 1 and cycles_behind == 2  # ahead: both steps in the first cycle
    assert later_cycle(step_n, step_n1)  # step N+1 took >= 1 more cycle
    assert took_behind >= 2 * PERIOD - SLACK
    assert results_ahead == results_behind  # same seq ids, same work, same results


def test_results_and_weights_match_the_unclocked_engine(engine, clocked):
    def run(c: Client, pipelined: bool) -> list:
        model = c.create_model(c.session(), 0, seed=11)
        ids = []
        for seq in (1, 3):
            ids += submit_step(c, model, seq)
            if not pipelined:  # wait for step N before submitting step N+1
                for request_id in ids:
                    c.done(request_id)
        return outcome(c, model, ids)

    on = run(Client(clocked.url), pipelined=True)
    off = run(Client(engine.url), pipelined=False)
    assert on == off
    assert on[0]["metrics"]["loss:sum"] != on[2]["metrics"]["loss:sum"]  # the optim step changed the weights


def test_resent_seq_id_is_answered_from_the_first_execution(engine, clocked):
    c = Client(clocked.url)
    model = c.create_model(c.session(), 0, seed=5)
    origin = clock_origin(c)
    just_after_boundary(origin)
    first = c.submit_fb(model, 1, data()).json()["request_id"]
    again = c.submit_fb(model, 1, data())  # resent while held
    assert again.status == 200 and again.json()["request_id"] == first
    assert clock(c)["held"] == 1
    conflict = c.submit_fb(model, 1, [datum(corpus(1, 16, 700)[0])])
    assert conflict.status == 409
    result = c.done(first)
    late = c.submit_fb(model, 1, data())  # resent after it ran
    assert late.status == 200 and late.json()["request_id"] == first
    assert c.done(first) == result
    step = c.ok("optim_step", {"model_id": model, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})
    assert c.ok("optim_step", {"model_id": model, "seq_id": 2,
                               "adam_params": {"learning_rate": 1e-2}})["request_id"] == step["request_id"]
    clocked_probe = outcome(c, model, [first, step["request_id"]])

    # The same two operations, once each, on the unclocked engine: gradients and step applied once.
    r = Client(engine.url)
    reference = r.create_model(r.session(), 0, seed=5)
    assert clocked_probe == outcome(r, reference, submit_step(r, reference, 1))
