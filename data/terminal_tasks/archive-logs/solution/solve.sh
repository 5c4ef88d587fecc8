#!/bin/bash
tar -czf /app/backup.tar.gz -C /app logs
