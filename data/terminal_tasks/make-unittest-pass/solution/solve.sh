#!/bin/bash
sed -i 's/ch in "aeio"/ch in "aeiou"/' /app/textutils.py
