import os
import sys

EXPECTED = {
    "/app/data/csv": {
        "orders.csv": "id,qty\n1,4\n2,9\n",
        "prices.csv": "sku,price\nA1,3.50\nB2,7.25\n",
        "visits.csv": "day,visits\nmon,120\ntue,98\n",
    },
    "/app/data/json": {
        "profile.json": '{"user": "ana", "theme": "dark"}\n',
        "client.json": '{"retries": 3}\n',
    },
    "/app/inbox": {
        "README.txt": "Files arrive here every night.\n",
        "notes.csv.txt": "not,a,csv,really\n",
    },
}

for directory, files in EXPECTED.items():
    found = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    if found != sorted(files):
        sys.exit(f"{directory} holds {found}, expected {sorted(files)}")
    for name, content in files.items():
        with open(os.path.join(directory, name)) as f:
            if f.read() != content:
                sys.exit(f"{directory}/{name}: content changed")
print("ok")
