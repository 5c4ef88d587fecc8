#!/bin/bash
grep -rl 'http://old.example.com' /app/site | xargs sed -i 's#http://old\.example\.com#https://new.example.com#g'
