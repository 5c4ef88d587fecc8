#!/bin/bash
find /app/repo -type f -name '*.py' | wc -l > /app/py_count.txt
