#!/bin/bash
grep -c ERROR /app/logs/app.log > /app/error_count.txt
