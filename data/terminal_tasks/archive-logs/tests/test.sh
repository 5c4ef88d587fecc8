#!/bin/bash
# Verifier: /app/backup.tar.gz is a gzip tar whose files are exactly logs/{app.log,worker.log,nginx/access.log} with their contents; /app/logs still there.
# check.py exits 0 when the task is done; the reward file is written whatever happens.
mkdir -p /logs/verifier
if python3 /tests/check.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
