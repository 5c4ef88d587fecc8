"""The offline pack (engine/offline): its wheels and tokenizers, beside a machine's own PyTorch stack
and nothing else, import the engine and pass the device-path tests through check.sh.

The "machine" is this venv's interpreter run with -S (no site-packages) and, on its path, links to
PyTorch, numpy, pytest and what they require, found from their own metadata (not from the pack's
list): everything else the engine needs must come from the pack."""

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def host_closure(roots=("torch", "numpy", "pytest")) -> set:
    """The distributions a PyTorch machine brings: PyTorch, numpy, pytest and what they require."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen, todo = set(), list(roots)
    while todo:
        name = _normalise(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def host_stack(into: Path) -> None:
    """Links into `into` the installed files of the host's distributions (host_closure), only."""
    host = host_closure() | {"pip"}
    site = Path(sysconfig.get_paths()["purelib"])
    into.mkdir(parents=True)
    for info in site.glob("*.dist-info"):
        if _normalise(info.name[: -len(".dist-info")].rsplit("-", 1)[0]) not in host:
            continue
        tops = {info.name}
        record = info / "RECORD"
        for line in record.read_text().splitlines() if record.is_file() else []:
            top = line.split(",")[0].split("/")[0]
            if top and not top.startswith("..") and not top.endswith(".pth"):
                tops.add(top)
        for top in tops:
            if (site / top).exists() and not (into / top).exists():
                (into / top).symlink_to(site / top)


def test_the_pack_runs_the_device_tests_beside_pytorch_alone(tmp_path):
    pack = tmp_path / "pack"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    subprocess.run(["node", str(REPO / "engine/offline/pack.mjs"), "--python-version", version, "--out", str(pack)],
                   cwd=REPO, check=True, timeout=600)
    manifest = (pack / "MANIFEST.txt").read_text()
    assert "transformers==" in manifest and "fastapi==" in manifest and "torch==" not in manifest
    assert sorted(p.parent.parent.name for p in pack.glob("tokenizers/*/models/tokenizer.json.gz")) == [
        "tokenizer-llama3", "tokenizer-qwen3"]

    host = tmp_path / "host"
    host_stack(host)
    assert (host / "torch").exists() and not (host / "transformers").exists() and not (host / "fastapi").exists()
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        # pip installs the pack; everything else runs with no site-packages but the host's stack.
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exec {sys.executable} "$@"; fi\n'
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{host}" exec {sys.executable} -S "$@"\n'
    )
    python.chmod(0o755)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TINKER_ENGINE_TOKENIZERS_DIR")}
    env.update(PYTHON=str(python), ENGINE_OFFLINE_PACK=str(pack), ENGINE_CHECK_WORK=str(tmp_path / "work"),
               ENGINE_CHECK_STAGES="tests", ENGINE_CHECK_BUDGET="300",
               # The env stage's 30 s slice is sized for an idle GPU host; importing torch on a loaded
               # 2-core machine can take longer, which is not what this test is about.
               ENGINE_CHECK_SLICES="env=150",
               ENGINE_CHECK_PYTEST_ARGS="-kgreedy_rows_decode_as_the_reference_path")
    done = subprocess.run(["bash", str(REPO / "engine/offline/check.sh"), str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    log = (out / "check.log").read_text() if (out / "check.log").exists() else ""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env_txt = (out / "env.txt").read_text()
    # The engine's packages came from the pack, PyTorch from the host.
    assert re.search(r"^transformers \S+ from .*/work/site/", env_txt, re.M), env_txt
    assert re.search(r"^fastapi \S+ from .*/work/site/", env_txt, re.M), env_txt
    assert re.search(r"^torch \S+ from .*/host/torch/", env_txt, re.M), env_txt
    assert "1 passed" in log and "tests exit 0" in log, log[-3000:]
