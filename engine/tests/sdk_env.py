"""Cached virtual environments holding the official `tinker` SDK at a pinned version.

Each SDK version gets its own venv (its dependencies may conflict with the engine's), built under
a temporary name and renamed into place once complete, with a file lock so that concurrent test
runs build it only once.
"""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE_ROOT = Path(os.environ.get("DURABLE_COOKBOOK_CACHE", Path.home() / ".cache" / "durable-cookbook"))


def sdk_python(version: str) -> Path:
    venv = CACHE_ROOT / f"tinker-sdk-{version}"
    python = venv / "bin" / "python"
    if (venv / ".complete").is_file():
        return python
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(CACHE_ROOT / f"tinker-sdk-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".complete").is_file():
            return python
        tmp = CACHE_ROOT / f".tinker-sdk-{version}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        base_python = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base_python, "-m", "venv", str(tmp)], check=True)
        subprocess.run(
            [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", f"tinker=={version}"],
            check=True,
        )
        (tmp / ".complete").write_text(version)
        shutil.rmtree(venv, ignore_errors=True)
        os.rename(tmp, venv)
    return python


# PyTorch and what it imports, lent from the venv running the tests (the engine's) to an SDK venv,
# which has no torch of its own: SDK custom losses are traced with torch.fx on the client.
_TORCH_PACKAGES = ("torch", "torchgen", "functorch", "sympy", "mpmath", "networkx", "jinja2", "markupsafe",
                   "filelock", "fsspec", "nvidia", "triton")


def torch_pythonpath(directory: Path) -> str:
    """A directory of links to this interpreter's torch packages, for an SDK flow's PYTHONPATH."""
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    directory.mkdir(parents=True, exist_ok=True)
    for name in _TORCH_PACKAGES:
        if (site / name).exists() and not (directory / name).exists():
            (directory / name).symlink_to(site / name)
    return str(directory)


if __name__ == "__main__":
    for v in sys.argv[1:]:
        print(sdk_python(v))
