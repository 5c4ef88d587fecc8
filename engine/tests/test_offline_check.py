"""The GPU check's stage runner (engine/offline/check.py) against stages that hang on purpose
(engine/offline/selftest_stage.py), and the live JUnit report its tests stage writes. On a rented
GPU a stage that outlives its slice must not take the lease with it: the check ends within its
budget + 10 s, stops every process a stage started (also those that left its process group), keeps
the measurements made before the cut and still runs the stages the budget has room for."""

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from xml.etree import ElementTree

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")


def marked(marker: str) -> list:
    """The live processes whose command line holds `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def kill_marked(marker: str) -> None:
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_hanging_stage_is_cut_with_every_process_it_started_and_the_budget_holds(tmp_path):
    budget = 17
    marker = f"engine-check-selftest-{uuid.uuid4().hex}"
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=sys.executable, ENGINE_CHECK_WORK=str(tmp_path / "work"),
               ENGINE_OFFLINE_PACK=str(tmp_path / "no-pack"), ENGINE_CHECK_BUDGET=str(budget),
               ENGINE_CHECK_STAGES="hang after hang", ENGINE_CHECK_SELFTEST=marker)
    start = time.monotonic()
    # stdout is a pipe read to its end, as `check.sh | tee` reads it: nothing a stage leaves behind
    # may hold it open.
    check = subprocess.Popen(["bash", str(REPO / "engine/offline/check.sh"), str(out)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        stdout, _ = check.communicate(timeout=budget + 60)
        elapsed = time.monotonic() - start
        survivors = marked(marker)
    except subprocess.TimeoutExpired:
        check.kill()
        pytest.fail(f"the check ran past {budget + 60} s")
    finally:
        kill_marked(marker)
    log = (out / "check.log").read_text()
    assert elapsed <= budget + 10, f"{elapsed:.1f} s for a {budget} s budget\n{log}"
    assert not survivors, f"processes of the check outlived it: {survivors}\n{log}"
    assert stdout.decode() == log  # what stdout shows is the log

    stages = json.loads((out / "stages.json").read_text())["stages"]
    assert [(s["stage"], s["status"]) for s in stages] == [("hang", "cut"), ("after", "ok"), ("hang", "cut")], log
    assert check.returncode == 1
    # The stage's group had its grace (SIGINT first) before anything was killed; the grandchild that
    # made a session of its own was found and killed anyway.
    assert log.count("child: stopped by SIGINT") == 2, log
    assert log.count("hang: killed 1 process(es) left outside its group") == 2, log
    assert "after: measured" in log
    bench = json.loads((out / "bench.json").read_text())
    assert bench["selftest_hang"] == 1.0 and bench["selftest_after"] == 2.0
    assert bench["ratios"] == {"selftest selftest_hang": 1.0, "selftest selftest_after": 2.0}


def test_the_live_junit_report_names_the_results_of_a_run_that_is_killed(tmp_path):
    """pytest's own --junitxml is written at the end of a session; a killed run leaves this one."""
    (tmp_path / "test_sample.py").write_text(textwrap.dedent("""
        import time, pytest

        def test_passes():
            pass

        def test_fails():
            assert 1 == 2

        @pytest.mark.skip(reason="not here")
        def test_skipped():
            pass

        def test_hangs():
            open("started", "w").close()
            time.sleep(600)

        def test_never_reached():
            pass
    """))
    report = tmp_path / "report.xml"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "engine/offline"), os.environ.get("PYTHONPATH", "")]),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "live_junit",
                            f"--live-junitxml={report}", "test_sample.py"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists():
            assert run.poll() is None and time.monotonic() < deadline, "the hanging test never started"
            time.sleep(0.1)
    finally:
        run.kill()  # no chance to write anything at the end
        run.wait()
    suite = ElementTree.parse(report).getroot().find("testsuite")
    cases = {c.get("name"): [e.tag for e in c] for c in suite.iter("testcase")}
    assert cases == {"test_passes": [], "test_fails": ["failure"], "test_skipped": ["skipped"], "test_hangs": ["error"]}
    hung = suite.find("testcase[@name='test_hangs']/error")
    assert "did not finish" in hung.get("message")
    assert "assert 1 == 2" in suite.find("testcase[@name='test_fails']/failure").text
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")


def load_check_module():
    spec = importlib.util.spec_from_file_location("engine_offline_check", REPO / "engine/offline/check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_breakdown_multiplies_to_the_ratio_and_waits_for_both_stages_at_one_shape():
    check = load_check_module()
    bench = {"train_shape": "8x512", "train_inprocess_shape": "8x512", "train_plain_tok_s": 19726.0,
             "train_engine_tok_s": 15490.0, "train_inprocess_engine_tok_s": 16800.0,
             "train_inprocess_plain_tok_s": 18100.0, "train_inprocess_plain_nondeterministic_tok_s": 18900.0,
             "train_inprocess_engine_nondeterministic_tok_s": 17600.0}
    out = check.train_breakdown(bench)
    assert out["ratio"] == pytest.approx(15490 / 19726)
    assert math.prod(out["factors"].values()) == pytest.approx(out["ratio"], rel=1e-12)
    assert out["factors"] == pytest.approx({"serving": 15490 / 16800, "step": 16800 / 18100,
                                            "determinism": 18100 / 18900, "settings": 18900 / 19726})
    assert out["engine_determinism"] == pytest.approx(16800 / 17600)
    assert out["summary"] == ("train breakdown (8x512): engine / plain 0.79 = serving 0.92 x step 0.93 x "
                              "determinism 0.96 x settings 0.96")
    assert out["engine_exact_attention"] is None  # measured on GPUs only
    on_gpu = check.train_breakdown({**bench, "train_inprocess_engine_fused_attention_tok_s": 16960.0})
    assert on_gpu["engine_exact_attention"] == pytest.approx(16800 / 16960)
    assert on_gpu["summary"].endswith("settings 0.96 (engine's determinism 0.95, of it exact attention backward 0.99)")
    # Until both stages have measured, at the same shape, there is nothing to split.
    assert check.train_breakdown({**bench, "train_inprocess_shape": "2x64"}) is None
    assert check.train_breakdown({k: v for k, v in bench.items() if k != "train_inprocess_plain_tok_s"}) is None
    assert check.train_breakdown({**bench, "train_engine_tok_s": None}) is None


def test_slice_overrides_are_read_by_stage_and_a_bad_one_is_named(monkeypatch):
    check = load_check_module()
    monkeypatch.setenv("ENGINE_CHECK_SLICES", "profile=60 concurrent=150.5")
    assert check.slice_overrides() == {"profile": 60.0, "concurrent": 150.5}
    for bad in ("profile", "profile=soon", "=30", "train=0"):
        monkeypatch.setenv("ENGINE_CHECK_SLICES", f"concurrent=150 {bad}")
        with pytest.raises(SystemExit, match=f"ENGINE_CHECK_SLICES: '{bad}' is not stage=seconds"):
            check.slice_overrides()


def test_the_train_and_profile_stages_split_the_training_ratio_on_this_machine(tmp_path):
    """The quick profile's path on CPU: the train stage over HTTP, the profile in-process, their
    figures combined into bench.json's train_breakdown and the operator tables in profile.txt.
    The slices are the GPU's; beside the rest of the gate on two cores these stages need more, and
    one thread each leaves the other core to the rest."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=sys.executable, ENGINE_CHECK_WORK=str(tmp_path / "work"),
               ENGINE_OFFLINE_PACK=str(tmp_path / "no-pack"), ENGINE_CHECK_STAGES="train profile",
               ENGINE_CHECK_SLICES="train=150 profile=150", ENGINE_CHECK_CPU_ARGS="--threads 1")
    run = subprocess.run(["bash", str(REPO / "engine/offline/check.sh"), str(out)], cwd=REPO, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    log = (out / "check.log").read_text()
    stages = json.loads((out / "stages.json").read_text())["stages"]
    assert [(s["stage"], s["status"]) for s in stages] == [("env", "ok"), ("train", "ok"), ("profile", "ok")], log
    assert run.returncode == 0, log
    bench = json.loads((out / "bench.json").read_text())
    assert "train_breakdown" in bench, f"{json.dumps(bench, indent=1)}\n{log}\n{(out / 'profile.txt').read_text()}"
    breakdown = bench["train_breakdown"]
    assert bench["train_shape"] == bench["train_inprocess_shape"] == "2x32"
    assert breakdown["ratio"] == pytest.approx(bench["ratios"]["training (engine / plain PyTorch + peft, goal >= 0.9)"])
    assert math.prod(breakdown["factors"].values()) == pytest.approx(breakdown["ratio"], rel=1e-9)
    # Measured, not made up (wide bounds: on a loaded machine the two stages see different loads).
    assert all(0.1 < f < 10 for f in breakdown["factors"].values()), breakdown
    assert breakdown["summary"] in log
    profile = (out / "profile.txt").read_text()
    for label in ("engine", "plain PyTorch + peft", "engine, determinism off", "plain PyTorch + peft, determinism off"):
        assert f"\n{label} " in profile, profile
    assert "== engine: top operators" in profile and "== plain: top operators" in profile
