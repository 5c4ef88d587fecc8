import os
import sys

SITE = "/app/site"
EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")


def files_under(root):
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names
    )


want = files_under(EXPECTED)
got = files_under(SITE) if os.path.isdir(SITE) else []
if got != want:
    sys.exit(f"{SITE} holds {got}, expected {want}")
for rel in want:
    with open(os.path.join(EXPECTED, rel)) as f:
        expected = f.read()
    with open(os.path.join(SITE, rel)) as f:
        if f.read() != expected:
            sys.exit(f"{rel} differs from the expected result")
print("ok")
