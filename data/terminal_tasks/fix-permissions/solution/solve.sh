#!/bin/bash
chmod 755 /app/bin/*.sh
chmod 600 /app/bin/secret.key
