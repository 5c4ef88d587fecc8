#!/bin/bash
mkdir -p /app/project/src/utils /app/project/tests /app/project/docs
touch /app/project/src/__init__.py /app/project/src/utils/__init__.py
