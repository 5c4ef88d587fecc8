import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ENGINE_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ENGINE_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))

API_KEY = "tml-test"

# As the engine sets it (cli.configure_determinism), before any test initialises CUDA: deterministic
# cuBLAS, which the device tests' bitwise comparisons need.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pytest_configure(config):
    # pytest shows warnings its own way, past the filter fast_decode installs for the engine.
    from tinker_engine.fast_decode import PUT_WARNING

    config.addinivalue_line("filterwarnings", f"ignore:{PUT_WARNING}")
    # `npm test` (the gate) runs `-m "not full"`; `npm run test:full` runs these too (docs/testing.md).
    config.addinivalue_line("markers", "full: the fuller tier only (long variants of checks the gate also makes)")
    # The tests' own PyTorch work gets as many threads as the engines they start.
    if os.environ.get("TINKER_ENGINE_THREADS"):
        import torch

        torch.set_num_threads(int(os.environ["TINKER_ENGINE_THREADS"]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EngineProcess:
    """The engine as a subprocess on a free loopback port, in its own process group."""

    def __init__(self, data_dir: Path, *extra: str, threads: int | None = None):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = list(extra)
        # npm test runs this suite beside the TypeScript one and asks engines for one thread each.
        self.threads = threads or int(os.environ.get("TINKER_ENGINE_THREADS") or 2)
        self.proc = None
        self.log_path = self.data_dir.parent / f"engine-{self.port}.log"

    def start(self, timeout: float = 120.0) -> "EngineProcess":
        cmd = [
            sys.executable, "-m", "tinker_engine", "--port", str(self.port), "--data-dir", str(self.data_dir),
            "--threads", str(self.threads), "--long-poll-seconds", "5", "--log-level", "warning", *self.extra,
        ]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            cmd, cwd=ENGINE_DIR, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engine exited with {self.proc.returncode}: {self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("engine did not become healthy in time")

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.log.close()
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    proc = EngineProcess(tmp_path_factory.mktemp("engine") / "data", "--max-body-mb", "4").start()
    yield proc
    proc.stop()


@pytest.fixture
def fresh_engine(tmp_path):
    """Factory for engines owned by one test (stopped at teardown)."""
    started = []

    def make(data_dir=None, *extra):
        proc = EngineProcess(data_dir or tmp_path / "data", *extra).start()
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.stop()
