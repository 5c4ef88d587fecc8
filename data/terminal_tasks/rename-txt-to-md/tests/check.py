import os
import sys

NOTES = "/app/notes"
EXPECTED = {
    "meeting.md": "Meeting with the storage team\n- agree on the backup window\n- review disk quotas\n",
    "todo.md": "buy milk\nwrite the release notes\ncall the plumber\n",
    "ideas.md": "A cache for the search index.\nA dark theme for the dashboard.\n",
    "server.log": "2024-05-01 10:00:00 server started\n2024-05-01 10:05:12 backup done\n",
}

found = sorted(os.listdir(NOTES)) if os.path.isdir(NOTES) else []
if found != sorted(EXPECTED):
    sys.exit(f"{NOTES} holds {found}, expected {sorted(EXPECTED)}")
for name, content in EXPECTED.items():
    with open(os.path.join(NOTES, name)) as f:
        if f.read() != content:
            sys.exit(f"{name}: content changed")
print("ok")
