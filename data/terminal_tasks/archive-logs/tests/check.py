import os
import sys
import tarfile

EXPECTED = {
    "logs/app.log": "app started\napp ready\n",
    "logs/worker.log": "job 1 done\njob 2 done\njob 3 failed\n",
    "logs/nginx/access.log": '10.0.0.1 - - "GET / HTTP/1.1" 200\n10.0.0.2 - - "GET /x HTTP/1.1" 404\n',
}

try:
    archive = tarfile.open("/app/backup.tar.gz", "r:gz")
except (OSError, tarfile.TarError) as e:
    sys.exit(f"/app/backup.tar.gz is not a gzip tar archive: {e}")
with archive:
    members = {}
    for member in archive.getmembers():
        if member.isfile():
            name = member.name[2:] if member.name.startswith("./") else member.name
            members[name] = archive.extractfile(member).read().decode()
if members != EXPECTED:
    sys.exit(f"the archive holds {sorted(members)}, expected {sorted(EXPECTED)} with their contents")
for rel, content in EXPECTED.items():
    path = os.path.join("/app", rel)
    if not os.path.isfile(path) or open(path).read() != content:
        sys.exit(f"{path} was removed or changed")
print("ok")
