#!/bin/bash
awk -F, 'NR > 1 { total += $3 } END { print total }' /app/sales.csv > /app/total.txt
