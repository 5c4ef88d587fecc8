#!/bin/bash
# Verifier: the .sh files have mode 755 and run, secret.key has 600, README.txt keeps 644.
# check.py exits 0 when the task is done; the reward file is written whatever happens.
mkdir -p /logs/verifier
if python3 /tests/check.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
