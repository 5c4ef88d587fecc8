#!/bin/bash
echo "report ok"
