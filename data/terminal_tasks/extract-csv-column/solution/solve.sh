#!/bin/bash
tail -n +2 /app/users.csv | cut -d, -f2 > /app/emails.txt
