import subprocess
import sys

for n in (0, 1, 2, 4, 7, 10, 99, 1000):
    out = subprocess.run(
        ["python3", "/app/script.py", str(n)], capture_output=True, text=True, timeout=10
    )
    if out.returncode != 0:
        sys.exit(f"script.py {n} failed: {out.stderr.strip()}")
    if out.stdout.strip() != str(n * (n + 1) // 2):
        sys.exit(f"script.py {n} printed {out.stdout.strip()!r}, expected {n * (n + 1) // 2}")
print("ok")
