#!/bin/bash
# Verifier: the task's unit tests pass against /app/textutils.py. The test file is first put
# back from this folder's pristine copy, so editing the tests during the episode does not help.
mkdir -p /logs/verifier
reward=0
if mkdir -p /app/tests && cp /tests/test_textutils.py /app/tests/test_textutils.py; then
  cd /app && python3 -m unittest discover -s tests -v && reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
