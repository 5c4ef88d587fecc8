#!/bin/bash
echo "cleanup ok"
