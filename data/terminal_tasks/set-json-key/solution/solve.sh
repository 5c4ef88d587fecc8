#!/bin/bash
python3 -c 'import json; p = "/app/settings.json"; d = json.load(open(p)); d["debug"] = False; d["max_workers"] = 8; json.dump(d, open(p, "w"), indent=2)'
