#!/bin/bash
mkdir -p /app/data/csv /app/data/json
mv /app/inbox/*.csv /app/data/csv/
mv /app/inbox/*.json /app/data/json/
