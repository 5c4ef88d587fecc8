import os
import sys

DIRS = ["/app/project/src/utils", "/app/project/tests", "/app/project/docs"]
EMPTY_FILES = ["/app/project/src/__init__.py", "/app/project/src/utils/__init__.py"]

for d in DIRS:
    if not os.path.isdir(d):
        sys.exit(f"missing directory {d}")
for f in EMPTY_FILES:
    if not os.path.isfile(f):
        sys.exit(f"missing file {f}")
    if os.path.getsize(f) != 0:
        sys.exit(f"{f} is not empty")
print("ok")
