#!/bin/bash
grep -rl 'TOKEN-7f3a' /app/docs > /app/answer.txt
