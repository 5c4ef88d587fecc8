#!/bin/bash
echo "backup ok"
