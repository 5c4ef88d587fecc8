import sys

TSV = "id\tname\tcity\tage\n1\tAlice\tLisbon\t34\n2\tBruno\tPorto\t41\n3\tCarla\tBraga\t29\n4\tDiogo\tFaro\t52\n5\tElsa\tCoimbra\t38\n6\tFilipe\tEvora\t23\n"

try:
    tsv = open("/app/data.tsv").read()
    csv = open("/app/data.csv").read()
except OSError as e:
    sys.exit(str(e))
if tsv != TSV:
    sys.exit("/app/data.tsv was changed")
want = TSV.replace("\t", ",").splitlines()
if csv.splitlines() != want:
    sys.exit(f"/app/data.csv holds {csv.splitlines()}, expected {want}")
print("ok")
