import os
import sys

try:
    text = open("/app/answer.txt").read()
    lines = [os.path.normpath(line.strip()) for line in text.splitlines() if line.strip()]
except OSError as e:
    sys.exit(str(e))
if lines != ["/app/docs/guides/deploy/notes-2.md"]:
    sys.exit(f"/app/answer.txt holds {lines}, expected the one path /app/docs/guides/deploy/notes-2.md")
print("ok")
