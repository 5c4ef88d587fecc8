# scripts/migrate.py
