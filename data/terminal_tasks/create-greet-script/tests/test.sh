#!/bin/bash
# Verifier: /app/greet.sh is executable and greets several names, run directly (so it needs its #! line).
mkdir -p /logs/verifier
reward=1
for name in Alice Bob Xavier_9 "Mary Ann"; do
  out=$(timeout 10 /app/greet.sh "$name" 2>/dev/null)
  if [ "$out" != "Hello, $name!" ]; then
    echo "greet.sh '$name' printed '$out'"
    reward=0
  fi
done
echo "$reward" > /logs/verifier/reward.txt
