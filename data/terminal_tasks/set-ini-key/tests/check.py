import configparser
import sys

EXPECTED = {
    "server": {"host": "0.0.0.0", "port": "9090", "workers": "2"},
    "database": {"host": "db.internal", "port": "5432", "name": "shop"},
    "logging": {"level": "info"},
}

parser = configparser.ConfigParser(interpolation=None)
try:
    if not parser.read("/app/config/app.ini"):
        sys.exit("cannot read /app/config/app.ini")
except configparser.Error as e:
    sys.exit(f"/app/config/app.ini does not parse: {e}")
got = {section: dict(parser[section]) for section in parser.sections()}
if got != EXPECTED:
    sys.exit(f"/app/config/app.ini holds {got}, expected {EXPECTED}")
print("ok")
