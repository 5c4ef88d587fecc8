#!/bin/bash
sed -i '/^\[server\]/,/^\[/ s/^port = .*/port = 9090/' /app/config/app.ini
