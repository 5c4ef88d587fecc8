#!/bin/bash
# Verifier: the .csv and .json files moved with their contents to /app/data/{csv,json}; the rest stayed in /app/inbox.
# check.py exits 0 when the task is done; the reward file is written whatever happens.
mkdir -p /logs/verifier
if python3 /tests/check.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
