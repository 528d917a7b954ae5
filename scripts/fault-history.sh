#!/bin/sh
# Fault checks of pbench history and of the command line's output (issue
# 28), each printing its figures and what was expected:
#   1. ADDS (10) `pbench history add`s at once into one new database: how
#      many exit 0 and how many rows land (expected: all of them);
#   2. a series of 10,006 runs whose newest 6 are 30% slower, made with one
#      transaction of the sqlite3 shell: `history show` must exit 3 and say
#      it shows the newest 4096;
#   3. `pbench report R.json > /dev/full` must exit 1 with "cannot write the
#      output".
# Exits 1 when a check fails.
#   scripts/fault-history.sh          (a few seconds; after a build)
#   PBENCH=build-x/pbench ADDS=30 KEEP=1 scripts/fault-history.sh
set -eu
cd "$(dirname "$0")/.."
PB="${PBENCH:-$PWD/build/pbench}"
case "$PB" in /*) ;; *) PB="$PWD/$PB" ;; esac
ADDS="${ADDS:-10}"
CONFIG="$PWD/configs/null.yaml"
OUT="$(mktemp -d)"
if [ -n "${KEEP:-}" ]; then echo "files in $OUT" >&2; fi
trap '[ -n "${KEEP:-}" ] || rm -rf "$OUT"' EXIT
cd "$OUT"
failed=0

"$PB" run "$CONFIG" -q -s dataset.path=data -s dataset.generate.count=64 \
    -s dataset.generate.size_bytes=4096 -s run.warmup_batches=2 -s run.min_time_s=0.2 \
    -s run.max_time_s=0.4 -s run.repeats=2 -s pipeline.decode.cost_us=100 -o R.json > /dev/null

# 1. Parallel adds: the same result under ADDS revisions, all at once.
i=0
while [ "$i" -lt "$ADDS" ]; do
    ("$PB" history add R.json --db par.db --revision "p$i" > "add$i.out" 2>&1
     echo $? > "add$i.rc") &
    i=$((i + 1))
done
wait
ok=$(cat add*.rc | grep -c '^0$' || true)
rows=$(sqlite3 par.db 'SELECT count(*) FROM runs')
echo "parallel adds: $ok of $ADDS exited 0, $rows rows in the database (expected $ADDS and $ADDS)"
grep -h 'pbench' add*.out | sort | uniq -c | sed 's/^/  /' || true
[ "$ok" -eq "$ADDS" ] && [ "$rows" -eq "$ADDS" ] || failed=1

# 2. A long series with a step in its newest runs.
"$PB" history add R.json --db long.db --revision r0 > /dev/null
sqlite3 long.db "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 10005)
  INSERT INTO runs (created, added, config, machine, revision, point, samples_per_s, identity,
                    fingerprint)
  SELECT strftime('%Y-%m-%dT%H:%M:%SZ', '2020-01-01', '+' || n || ' minutes'), added, config,
         machine, 'g' || n, point, CASE WHEN n > 9999 THEN 700 ELSE 1000 + n % 7 END,
         'gen' || n, fingerprint
  FROM k, (SELECT * FROM runs LIMIT 1);
  UPDATE runs SET samples_per_s = 1000, created = '2019-12-31T00:00:00Z' WHERE revision = 'r0';"
code=0
"$PB" history show --db long.db > long.out 2>&1 || code=$?
echo "10,006-run series, newest 6 at -30%: history show exits $code (expected 3)"
grep -E 'newest|STEP CHANGE' long.out | sed 's/^/  /'
[ "$code" -eq 3 ] || failed=1

# 3. The output cannot be written.
if [ -w /dev/full ]; then
    code=0
    "$PB" report R.json > /dev/full 2> full.err || code=$?
    echo "pbench report R.json > /dev/full: exit $code (expected 1): $(cat full.err)"
    [ "$code" -eq 1 ] && grep -q 'cannot write the output' full.err || failed=1
fi
exit "$failed"
