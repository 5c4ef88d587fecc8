"""SDK 0.38 custom losses through the official SDK (with torch lent from the engine's venv): the
server-side path on an engine started with --custom-loss-server-side, the client-side path on one
without, and a plain callable on both; each must train exactly like cross_entropy."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import EngineProcess
from sdk_env import sdk_python, torch_pythonpath

FLOW = Path(__file__).parent / "sdk_flows" / "custom_loss_flow.py"


def run_flow(url: str, torch_dir: Path) -> dict:
    env = {**os.environ, "TINKER_TELEMETRY": "0", "TINKER_API_KEY": "tml-conformance",
           "PYTHONPATH": torch_pythonpath(torch_dir)}
    env.pop("TINKER_BASE_URL", None)
    proc = subprocess.run([str(sdk_python("0.38.0")), str(FLOW), url], capture_output=True, text=True,
                          timeout=600, env=env, cwd=FLOW.parent)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"custom loss flow failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return json.loads(lines[-1][len("REPORT "):])


@pytest.mark.parametrize("server_side", [True, False])
def test_sdk_custom_losses_train_like_cross_entropy(server_side, tmp_path):
    flags = ["--custom-loss-server-side"] if server_side else []
    engine = EngineProcess(tmp_path / "data", *flags).start()
    try:
        r = run_flow(engine.url, tmp_path / "torch")
    finally:
        engine.stop()
    if server_side:
        assert r["loss_id"].endswith(":loss:0"), "the SDK uploaded the loss"
        assert "surrogate_loss:sum" not in r["custom_metrics"], "one server-side request, no surrogate"
    else:
        assert r["loss_id"] is None, "without the flag the SDK keeps the loss client-side"
        assert "surrogate_loss:sum" in r["custom_metrics"]
    twin = r["twin_metrics"]["loss:sum"]
    assert abs(r["custom_metrics"]["loss:sum"] - twin) < 1e-3 * abs(twin)
    assert abs(r["custom_metrics"]["custom/neg_ll:sum"] - twin) < 1e-3 * abs(twin)
    custom, reference = r["after"]
    assert max(abs(a - b) for x, y in zip(custom, reference) for a, b in zip(x, y)) < 1e-5
    callable_twin = r["callable_twin_metrics"]["loss:sum"]
    assert abs(r["callable_metrics"]["loss:sum"] - callable_twin) < 1e-3 * abs(callable_twin)
