import os
import stat
import subprocess
import sys

BIN = "/app/bin"
MODES = {
    "backup.sh": 0o755,
    "cleanup.sh": 0o755,
    "report.sh": 0o755,
    "secret.key": 0o600,
    "README.txt": 0o644,
}

for name, want in MODES.items():
    path = os.path.join(BIN, name)
    if not os.path.isfile(path):
        sys.exit(f"missing {path}")
    got = stat.S_IMODE(os.stat(path).st_mode)
    if got != want:
        sys.exit(f"{path} has mode {got:o}, expected {want:o}")
for name in ("backup", "cleanup", "report"):
    out = subprocess.run([os.path.join(BIN, f"{name}.sh")], capture_output=True, text=True, timeout=10)
    if out.stdout.strip() != f"{name} ok":
        sys.exit(f"{name}.sh printed {out.stdout!r}")
print("ok")
