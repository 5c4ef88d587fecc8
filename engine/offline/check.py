#!/usr/bin/env python3
"""The engine's GPU check: `bash engine/offline/check.sh [OUT_DIR] [--full]` runs this file.

On a machine with PyTorch (and a GPU) but no package index, from the repo root, after
`npm run engine:pack-offline` put .offline/ there (or ENGINE_OFFLINE_PACK names the folder;
PYTHON names the interpreter that has PyTorch, default python3). Stages, in this order:

  install     the packed wheels beside the machine's own PyTorch (under ENGINE_CHECK_WORK, default
              /tmp/engine-check-work; nothing system-wide) and the tokenizers
  env         versions, the GPU, nvidia-smi → env.txt; the engine must import, or the check ends
  tests       the device-path tests (fast sampler and CUDA graphs, mixed-precision head, non-finite
              gradient check, sync-free uploads, no reads of unwritten memory) → tests.xml
  checkpoint  on CUDA, a random-weight checkpoint of ENGINE_CHECK_PRESET's shapes (kept in WORK)
  train, concurrent, overlap, sample
              bench_engine.py, one section per stage, every baseline on the same device → bench.json
  profile, decode
              profile_train.py, profile_decode.py → profile.txt, decode.txt; the training profile's
              rows also go to bench.json, where with train's figures they split the training ratio
              into factors (train_breakdown, below)
  suite       the rest of the engine tests in float32 → suite.log

Profiles: `quick` (the default) runs tests, train, concurrent (64, 256 and 512 requests), overlap
and a short training profile in a 350 s budget; `full` (--full, or ENGINE_CHECK_PROFILE=full) runs
every stage in 540 s.
ENGINE_CHECK_STAGES picks stages (run in the order given), ENGINE_CHECK_BUDGET sets the budget,
ENGINE_CHECK_SLICES overrides slices ("profile=60 concurrent=150": seconds by stage).

Why Python rather than bash: a stage is a process group (its own session) that is stopped at its
slice — SIGINT (pytest writes its summary, a benchmark stops its engines), SIGTERM, then SIGKILL, a
few seconds apart — and processes that left the group (the engines a test starts make sessions of
their own) are found and killed too, which needs this process to be their subreaper (prctl) and to
read /proc. A stage's output goes to a file, never through a pipe, so nothing it leaves behind can
keep the check waiting. So the budget is a hard ceiling: the check ends within it + 10 s.

OUT_DIR (default /tmp/engine-check) gets: check.log (everything, stage by stage; also echoed on
stdout), env.txt, tests.xml, bench.json (every number and ratio so far, rewritten as the benchmark
writes them), stages.json (each stage's slice, seconds and outcome), profile.txt, decode.txt,
suite.log. The exit status is 0 when every stage ran and passed, 1 when one failed, was cut or
was skipped, 2 when the packages could not be installed or the engine does not import.
"""

import ctypes
import gzip
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "engine"
BENCH = REPO / "bench" / "engine"
# test_attention first: its kernels, compiled there, are cached on disk for the benchmarks' engines.
DEVICE_TESTS = ["tests/test_attention.py", "tests/test_fast_decode.py", "tests/test_head.py",
                "tests/test_grads_finite.py", "tests/test_device_transfers.py", "tests/test_uninitialized_memory.py"]
BENCH_SECTIONS = ("train", "concurrent", "overlap", "sample")
NEEDS_MODEL = BENCH_SECTIONS + ("profile", "decode")
SELFTEST = ("hang", "after")  # tests/test_offline_check.py's stages (ENGINE_CHECK_SELFTEST=<marker>)

# Budget, stages and each stage's slice (the most seconds it may take). Quick is sized to end in
# 6 minutes on an H100 with the install and the checkpoint: its measuring stages' slices (305 s)
# leave 45 s of its budget for install, env and checkpoint; should those take longer, the last
# stage (the profile, which explains the training ratio but measures none of the three) gets what
# is left or is skipped. The tests took 90 s for 29 of them there before the CPU variants were left
# out; concurrent took most of 150 s at 64 requests with the reference sampler.
PROFILES = {
    "quick": (350, ["tests", "train", "concurrent", "overlap", "profile"],
              {"install": 40, "env": 30, "tests": 85, "checkpoint": 60, "train": 45, "concurrent": 105,
               "overlap": 40, "profile": 30}),
    "full": (540, ["tests", "train", "concurrent", "overlap", "sample", "profile", "decode", "suite"],
             {"install": 40, "env": 30, "tests": 120, "checkpoint": 60, "train": 60, "concurrent": 150,
              "overlap": 60, "sample": 45, "profile": 90, "decode": 60, "suite": 10**6}),
}
SELFTEST_SLICES = {"hang": 6, "after": 10}
# A stage starts only with this much of the budget left (a benchmark needs its engine up first).
MIN_START = {**{s: 30 for s in NEEDS_MODEL}, "tests": 20, "suite": 20, "checkpoint": 20}
# What the quick profile measures on CUDA: the three ratios, with fewer tokens and repeats than the
# full benchmark so that 256 and 512 requests fit (the reference sampler, minutes there, is left out).
QUICK_CUDA_ARGS = {
    "train": ["--steps", "3"],
    "concurrent": ["--concurrent", "64,256,512", "--rl-tokens", "64", "--rounds", "2", "--skip-reference"],
    "overlap": ["--rl-tokens", "64", "--overlap-steps", "5"],
    "profile": ["--quick", "--rows", "15"],
}
FULL_CUDA_ARGS = {"concurrent": ["--concurrent", "64,256,512"], "profile": ["--variants"], "decode": ["--variants"]}
# On CPU (the check's own tests) small sizes, the same for train and profile so that their figures
# combine into the training breakdown.
CPU_ARGS = {
    "train": ["--datums", "2", "--length", "32", "--steps", "3"],
    "overlap": ["--skip-reference"],  # as on CUDA: the fast sampler beside the trainer
    "profile": ["--quick", "--datums", "2", "--length", "32", "--rows", "12"],
    "decode": ["--rows", "8", "--tokens", "4", "--profile-rows", "12"],
}
GRACE = ((signal.SIGINT, 4.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0))  # signal, then seconds to wait

ENV_PROBE = r"""
import importlib, subprocess, sys, time
print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
try:
    print(subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout)
except Exception as e:  # noqa: BLE001
    print("no nvidia-smi:", e)
print("python", sys.version.split()[0])
for name in ("torch", "transformers", "peft", "tokenizers", "fastapi", "uvicorn", "numpy", "pytest"):
    try:
        m = importlib.import_module(name)
        print(f"{name} {getattr(m, '__version__', '?')} from {getattr(m, '__file__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"{name}: {type(e).__name__}: {e}")
import torch
cuda = torch.cuda.is_available()
print("cuda", cuda, torch.version.cuda, torch.cuda.get_device_name(0) if cuda else "-")
print("device", "cuda" if cuda else "cpu", flush=True)
sys.path.insert(0, "engine")
import tinker_engine.server  # noqa: E402,F401
print("the engine imports")
"""


class Interrupted(Exception):
    """The check itself was signalled: stop the running stage and end."""


def _on_signal(signum, _frame):
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)  # the cleanup that follows is bounded; let it finish
    raise Interrupted(signal.Signals(signum).name)


def become_subreaper() -> None:
    """Orphans of a stage (say an engine in a session of its own whose parent was killed) are
    re-parented to this process instead of init, so that sweep() still finds them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass  # not Linux: stages are still stopped by their group


def processes() -> dict:
    """pid → (ppid, process group, state) of every process, from /proc (empty where there is none)."""
    table = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def descendants() -> dict:
    """pid → state of this process's descendants."""
    table, me = processes(), os.getpid()
    children: dict = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(me, []))
    while todo:
        pid = todo.pop()
        found[pid] = table[pid][2]
        todo += children.get(pid, [])
    return found


def reap() -> None:
    """Collects this process's dead children: orphans re-parented to it (a stage's leader is
    reaped first by its Popen, which must see its exit status)."""
    for pid, (ppid, _, state) in processes().items():
        if ppid == os.getpid() and state == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def group_alive(proc: subprocess.Popen) -> bool:
    """Whether a process of the stage's group still runs (zombies, which killpg still finds, do not).
    The leader counts until it is reaped: a killed multi-threaded process shows as a zombie while
    its other threads are still exiting."""
    if proc.poll() is None:
        return True
    reap()
    table = processes()
    if table:
        return any(pgrp == proc.pid and state != "Z" for _, pgrp, state in table.values())
    try:
        os.killpg(proc.pid, 0)
        return True
    except ProcessLookupError:
        return False


def stop_group(proc: subprocess.Popen) -> None:
    """SIGINT to the stage's process group, then SIGTERM, then SIGKILL, each after a short grace."""
    for sig, grace in GRACE:
        if not group_alive(proc):
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_alive(proc):
            time.sleep(0.1)
    proc.poll()


def sweep() -> list:
    """SIGKILLs every process the check started that is still alive — those that left the stage's
    group: they had the group's grace through their parents. Returns the pids it killed."""
    killed: list = []
    for _ in range(20):
        reap()
        alive = [pid for pid, state in descendants().items() if state != "Z"]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    reap()
    return sorted(set(killed))


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# train_breakdown's factors: (name, numerator key, denominator key, what it measures). Their product
# is the training ratio (the engine over HTTP ÷ the plain loop under PyTorch's defaults), because
# each denominator is the next numerator.
BREAKDOWN = (
    ("serving", "train_engine_tok_s", "train_inprocess_engine_tok_s",
     "the engine over HTTP / its training step in-process: requests, futures, the server's threads"),
    ("step", "train_inprocess_engine_tok_s", "train_inprocess_plain_tok_s",
     "the engine's training step / the plain loop's, both under the engine's settings"),
    ("determinism", "train_inprocess_plain_tok_s", "train_inprocess_plain_nondeterministic_tok_s",
     "deterministic algorithms on / off, on the plain loop"),
    ("settings", "train_inprocess_plain_nondeterministic_tok_s", "train_plain_tok_s",
     "the plain loop under the engine's other settings (on CUDA its fixed cuBLAS workspace) / under PyTorch's defaults"),
)


def train_breakdown(bench: dict):
    """The training ratio split into factors that multiply to it, or None until the train and
    profile stages have both measured, at the same shape (a factor below 1 is where time goes)."""
    keys = {k for _, num, den, _ in BREAKDOWN for k in (num, den)}
    if not all(isinstance(bench.get(k), (int, float)) and bench[k] > 0 for k in keys):
        return None
    if bench.get("train_shape") != bench.get("train_inprocess_shape"):
        return None
    factors = {name: bench[num] / bench[den] for name, num, den, _ in BREAKDOWN}
    ratio = bench["train_engine_tok_s"] / bench["train_plain_tok_s"]
    # Deterministic algorithms cost the engine's step differently from the plain loop's: reported beside.
    nondeterministic = bench.get("train_inprocess_engine_nondeterministic_tok_s")
    engine_determinism = bench["train_inprocess_engine_tok_s"] / nondeterministic if nondeterministic else None
    # Of that, the exact attention backward (bitwise reproducible steps) against the fused kernels'.
    fused = bench.get("train_inprocess_engine_fused_attention_tok_s")
    exact_attention = bench["train_inprocess_engine_tok_s"] / fused if fused else None
    summary = (f"train breakdown ({bench['train_shape']}): engine / plain {ratio:.2f} = "
               + " x ".join(f"{name} {value:.2f}" for name, value in factors.items()))
    if exact_attention is not None and engine_determinism is not None:
        summary += f" (engine's determinism {engine_determinism:.2f}, of it exact attention backward {exact_attention:.2f})"
    return {"ratio": ratio, "factors": factors, "engine_determinism": engine_determinism,
            "engine_exact_attention": exact_attention,
            "meaning": {name: meaning for name, _, _, meaning in BREAKDOWN}, "summary": summary}


def slice_overrides() -> dict:
    """ENGINE_CHECK_SLICES ("stage=seconds ..."), or a clear exit naming what is wrong with it."""
    overrides = {}
    for item in os.environ.get("ENGINE_CHECK_SLICES", "").split():
        name, _, seconds = item.partition("=")
        try:
            overrides[name] = float(seconds)
        except ValueError:
            sys.exit(f"ENGINE_CHECK_SLICES: {item!r} is not stage=seconds")
        if not name or overrides[name] <= 0:
            sys.exit(f"ENGINE_CHECK_SLICES: {item!r} is not stage=seconds (seconds > 0)")
    return overrides


class Check:
    def __init__(self, out: Path, work: Path, profile: str, budget: float):
        self.out, self.work, self.profile, self.budget = out, work, profile, budget
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.log = out / "check.log"
        self.log.write_text("")
        self.shown = 0
        self.parts = work / "bench-parts"
        shutil.rmtree(self.parts, ignore_errors=True)
        self.parts.mkdir(parents=True)
        self.merged: list = []
        self.breakdown = None
        self.records: list = []
        self.slices = dict(PROFILES[profile][2], **SELFTEST_SLICES, **slice_overrides())
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", TINKER_TELEMETRY="0",
                        TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        self.python = os.environ.get("PYTHON") or sys.executable

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def echo(self) -> None:
        """Copies what the log gained to stdout (a file read: it never waits on a stage)."""
        with open(self.log, "rb") as f:
            f.seek(self.shown)
            data = f.read()
        self.shown += len(data)
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except OSError:
            pass  # nobody reads stdout any more: the log still has it all

    def say(self, line: str) -> None:
        with open(self.log, "a") as f:
            f.write(line + "\n")
        self.echo()

    def merge(self) -> None:
        """bench.json: every part a benchmark stage wrote so far, merged (ratios under "ratios")."""
        parts = sorted(self.parts.glob("*.json"))
        stamp = [(p.name, p.stat().st_mtime_ns) for p in parts]
        if stamp == self.merged:
            return
        merged, ratios = {}, {}
        for part in parts:
            try:
                data = json.loads(part.read_text() or "{}")
            except (OSError, ValueError):
                stamp = []  # caught mid-write: merged again at the next poll
                continue
            ratios.update(data.pop("ratios", None) or {})
            merged.update(data)
        merged["ratios"] = ratios
        self.breakdown = train_breakdown(merged)
        if self.breakdown:
            merged["train_breakdown"] = self.breakdown
        write_atomic(self.out / "bench.json", json.dumps(merged, indent=2))
        self.merged = stamp

    def record(self, name: str, status: str, slice_s: float = 0.0, seconds: float = 0.0) -> None:
        self.records.append({"stage": name, "status": status, "slice_s": round(slice_s), "seconds": round(seconds, 1)})
        write_atomic(self.out / "stages.json", json.dumps(
            {"profile": self.profile, "budget_s": self.budget, "stages": self.records}, indent=2))

    def run(self, name: str, cmd: list, *, cwd: Path = REPO, env: dict = None, output: Path = None):
        """Runs one stage in a session of its own, stopped at its slice. Returns its exit status,
        or None when it did not run or was cut."""
        slice_s = min(self.slices.get(name, 60), self.left())
        if slice_s < MIN_START.get(name, 1):
            self.say(f"== {name}: skipped, {max(self.left(), 0):.0f} s of the budget left")
            self.record(name, "skipped: budget")
            return None
        self.say(f"== {name} ({self.left():.0f} s left, slice {slice_s:.0f} s, {time.strftime('%H:%M:%S', time.gmtime())} UTC)")
        start = time.monotonic()
        with open(output or self.log, "ab") as sink:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env or self.env, stdin=subprocess.DEVNULL, stdout=sink,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        cut = False
        try:
            while proc.poll() is None and time.monotonic() - start < slice_s:
                time.sleep(max(0.0, min(0.5, slice_s - (time.monotonic() - start))))
                self.echo()
                self.merge()
            cut = proc.poll() is None
        except Interrupted:
            self.record(name, "stopped with the check", slice_s, time.monotonic() - start)
            raise
        finally:
            cut = cut or proc.poll() is None
            stop_group(proc)  # also what the stage left running in its group when it ended
            killed = sweep()
            self.merge()
        seconds = time.monotonic() - start
        if killed:
            self.say(f"{name}: killed {len(killed)} process(es) left outside its group")
        if cut:
            self.say(f"{name} cut at its {slice_s:.0f} s slice after {seconds:.0f} s (exit {proc.returncode})")
            self.record(name, "cut", slice_s, seconds)
            return None
        self.say(f"{name} exit {proc.returncode} ({seconds:.0f} s)")
        self.record(name, "ok" if proc.returncode == 0 else f"exit {proc.returncode}", slice_s, seconds)
        return proc.returncode

    # ------------------------------------------------------------------------ stages

    def install(self, pack: Path) -> bool:
        wheels = sorted((pack / "wheels").glob("*.whl"))
        if wheels:
            site = self.work / "site"
            shutil.rmtree(site, ignore_errors=True)
            rc = self.run("install", [self.python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                      "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(site),
                                      *map(str, wheels)])
            if rc != 0:
                self.say("installing the packed wheels failed")
                return False
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), self.env.get("PYTHONPATH")]))
        gzipped = sorted((pack / "tokenizers").glob("*/models/tokenizer.json.gz"))
        if gzipped:
            tokenizers = self.work / "tokenizers"
            shutil.rmtree(tokenizers, ignore_errors=True)
            for gz in gzipped:
                dest = tokenizers / gz.relative_to(pack / "tokenizers").with_suffix("")
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(gzip.decompress(gz.read_bytes()))
            self.env["TINKER_ENGINE_TOKENIZERS_DIR"] = str(tokenizers)
        return True

    def probe(self):
        """env.txt; the device ('cuda' or 'cpu'), or None when the engine does not import."""
        env_txt = self.out / "env.txt"
        rc = self.run("env", [self.python, "-c", ENV_PROBE], output=env_txt)
        text = env_txt.read_text(errors="replace") if env_txt.exists() else ""
        with open(self.log, "a") as f:
            f.write(text)
        self.echo()
        if rc != 0:
            self.say("env did not finish in its slice" if rc is None else
                     "the engine does not import with these packages (see env.txt)")
            return None
        return "cuda" if "\ndevice cuda\n" in text else "cpu"

    def tests(self, device: str) -> None:
        env = dict(self.env, PYTHONPATH=os.pathsep.join(filter(None, [str(ENGINE / "offline"), self.env.get("PYTHONPATH")])))
        if device == "cuda" and self.profile == "quick":
            env["ENGINE_TEST_DEVICES"] = "cuda"  # the CPU variants are the CPU gate's
        report = self.out / "tests.xml"
        self.run("tests", [self.python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "live_junit",
                           f"--live-junitxml={report}", *DEVICE_TESTS,
                           *shlex.split(os.environ.get("ENGINE_CHECK_PYTEST_ARGS", ""))], cwd=ENGINE, env=env)
        if report.exists():  # the names, also when pytest was cut before its summary
            suite = ElementTree.parse(report).getroot().find("testsuite")
            bad = [f"{c.get('classname')}::{c.get('name')} ({e.tag}: {e.get('message', '')[:200]})"
                   for c in suite.iter("testcase") for e in c if e.tag in ("failure", "error")]
            self.say(f"tests.xml: {suite.get('tests')} tests, {suite.get('failures')} failed, "
                     f"{suite.get('errors')} errors, {suite.get('skipped')} skipped")
            for line in bad:
                self.say(f"  NOT PASSED {line}")

    def checkpoint(self, preset: str):
        ckpt = self.work / f"checkpoint-{preset}"
        if not (ckpt / "config.json").is_file():
            partial = ckpt.with_name(ckpt.name + ".partial")  # a cut run leaves no half checkpoint behind
            shutil.rmtree(partial, ignore_errors=True)
            if self.run("checkpoint", [self.python, str(BENCH / "make_checkpoint.py"), "--preset", preset,
                                       "--out", str(partial)]) != 0:
                return None
            partial.rename(ckpt)
        return ckpt

    def bench(self, section: str, model_args: list, extra: list) -> None:
        self.run(section, [self.python, str(BENCH / "bench_engine.py"), *model_args, "--sections", section,
                           "--json-out", str(self.parts / f"{len(self.records):02d}-{section}.json"), *extra])

    def to_file(self, name: str, cmd: list, output: str, **kw) -> None:
        rc = self.run(name, cmd, output=self.out / output, **kw)
        lines = (self.out / output).read_text(errors="replace").strip().splitlines() if (self.out / output).exists() else []
        if rc is not None or lines:
            self.say(f"{name}: {lines[-1] if lines else '(no output)'}  [{output}]")

    def selftest(self, mode: str, marker: str) -> None:
        self.run(mode, [self.python, str(ENGINE / "offline" / "selftest_stage.py"), mode, marker,
                        str(self.parts / f"{len(self.records):02d}-{mode}.json")])


def main(argv: list) -> int:
    full = "--full" in argv
    positional = [a for a in argv if not a.startswith("--")]
    profile = "full" if full or os.environ.get("ENGINE_CHECK_PROFILE") == "full" else "quick"
    budget_default, default_stages, _ = PROFILES[profile]
    budget = float(os.environ.get("ENGINE_CHECK_BUDGET") or budget_default)
    stages = (os.environ.get("ENGINE_CHECK_STAGES") or " ".join(default_stages)).split()
    out = Path(positional[0] if positional else os.environ.get("OUT") or "/tmp/engine-check").resolve()
    work = Path(os.environ.get("ENGINE_CHECK_WORK", "/tmp/engine-check-work")).resolve()
    pack = Path(os.environ.get("ENGINE_OFFLINE_PACK", ".offline")).resolve()
    preset = os.environ.get("ENGINE_CHECK_PRESET", "qwen3-0.6b")
    marker = os.environ.get("ENGINE_CHECK_SELFTEST", "")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(REPO)
    become_subreaper()
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)

    check = Check(out, work, profile, budget)
    check.say(f"== engine GPU check, profile {profile}, budget {budget:.0f} s, stages: {' '.join(stages)}")
    status = 0
    try:
        device, model_args = None, None
        if any(s not in SELFTEST for s in stages):
            if not check.install(pack):
                return 2
            device = check.probe()
            if device is None:
                return 2
        cuda_args = QUICK_CUDA_ARGS if profile == "quick" else FULL_CUDA_ARGS
        for name in stages:
            if name in SELFTEST and marker:
                check.selftest(name, marker)
                continue
            if name == "tests":
                check.tests(device)
                continue
            if name in NEEDS_MODEL and model_args is None:
                # CUDA: the checkpoint (made once, by the first stage that needs it); CPU: a tiny model.
                ckpt = check.checkpoint(preset) if device == "cuda" else None
                model_args = (["--device", "cuda", "--model", str(ckpt)] if ckpt else [] if device == "cuda" else
                              ["--device", "cpu", *shlex.split(os.environ.get("ENGINE_CHECK_CPU_ARGS", ""))])
            if name in NEEDS_MODEL and not model_args:
                check.say(f"== {name}: skipped, no checkpoint")
                check.record(name, "skipped: no checkpoint")
            elif name in BENCH_SECTIONS:
                check.bench(name, model_args, (cuda_args if device == "cuda" else CPU_ARGS).get(name, []))
            elif name in ("profile", "decode"):
                script = {"profile": "profile_train.py", "decode": "profile_decode.py"}[name]
                extra = (cuda_args if device == "cuda" else CPU_ARGS).get(name, [])
                if name == "profile":  # its rows, for bench.json's train_breakdown
                    extra = [*extra, "--json-out", str(check.parts / f"{len(check.records):02d}-profile.json")]
                check.to_file(name, [check.python, str(BENCH / script), *model_args, *extra], f"{name}.txt")
            elif name == "suite":
                # In float32: the suite's expectations are float32's (bf16 is checked by the tests
                # stage's dtype tests and measured by the benchmark).
                skip = [*DEVICE_TESTS, "tests/test_offline_pack.py", "tests/test_offline_check.py",
                        "tests/test_conformance_sdk.py", "tests/test_conformance_custom_loss.py"]
                check.to_file("suite", [check.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                                        *(f"--ignore={t}" for t in skip)], "suite.log", cwd=ENGINE,
                              env=dict(check.env, TINKER_ENGINE_DTYPE="float32"))
            else:
                check.say(f"== {name}: unknown stage")
                check.record(name, "skipped: unknown stage")
    except Interrupted as e:
        check.say(f"== the check was stopped ({e})")
        status = 1
    finally:
        sweep()
        check.merge()
        if check.breakdown:
            check.say(check.breakdown["summary"])
        outcomes = " · ".join(f"{r['stage']} {r['status']}" for r in check.records)
        check.say(f"== done in {time.monotonic() - check.started:.0f} s of {budget:.0f}: {outcomes}")
    failed = any(r["status"] != "ok" for r in check.records)  # a skipped stage leaves the check incomplete
    return status or int(failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
