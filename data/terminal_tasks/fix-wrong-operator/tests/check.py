import subprocess
import sys

CASES = {"0": "32.0", "100": "212.0", "-40": "-40.0", "37": "98.6", "21.5": "70.7", "-17.5": "0.5"}

for arg, want in CASES.items():
    out = subprocess.run(
        ["python3", "/app/convert.py", arg], capture_output=True, text=True, timeout=10
    )
    if out.returncode != 0:
        sys.exit(f"convert.py {arg} failed: {out.stderr.strip()}")
    if out.stdout.strip() != want:
        sys.exit(f"convert.py {arg} printed {out.stdout.strip()!r}, expected {want}")
print("ok")
