# shellcheck shell=bash
# test/bench/lib.sh: helpers shared by the benchmark scenarios.  scripts/bench
# sources it after scripts/lib.sh, with these set:
#   WORK    scratch directory (writable by postgres)
#   OUT     results directory (report.md, CSVs, PNGs)
#   ROWS    rows of the big data sets
#   SECS    seconds per measured run
#   REPEAT  runs per figure (medians with min-max over them)
#
# A scenario is test/bench/<name>.sh defining
#   <name>_modes="on off"   the pg_peek.interactive values it runs under
#   <name>_run MODE         measures, appending rows to its CSV(s)
#   <name>_report           appends its section to the report (and charts)

BENCH_T0=$(date +%s)

# Progress line with the elapsed time, so a slow step shows itself.
progress() {
    local s=$(($(date +%s) - BENCH_T0))
    printf '[%2d:%02d] %s\n' $((s / 60)) $((s % 60)) "$*"
}

mode_name() { if [[ $1 == on ]]; then echo split; else echo solo; fi; }

# ---- clusters ------------------------------------------------------------

# Start a throwaway cluster for pg_peek.interactive = $1 and create the
# extension.  Sets DATA, SOCK, PORT, MODE.  wal_level = logical is for
# capture; every scenario runs on the same configuration, baselines included.
bench_cluster_start() {
    MODE=$1
    DATA=$WORK/data-$MODE
    SOCK=$WORK/sock-$MODE
    PORT=$(pick_free_port 55432)
    POINTS_LOADED=0
    progress "starting a cluster with pg_peek.interactive = $MODE ($(mode_name "$MODE"))"
    cluster_init "$DATA" "$SOCK" "$PORT" "$WORK/initdb-$MODE.log" \
        "shared_preload_libraries = 'pg_peek'" "pg_peek.interactive = $MODE" \
        "shared_buffers = '1GB'" "synchronous_commit = off" \
        "pg_peek.max_memory = '4GB'" "max_wal_size = '4GB'" \
        "wal_level = logical" "max_replication_slots = 8" "max_wal_senders = 8"
    cluster_start "$DATA" "$WORK/server-$MODE.log"
    psql_q -c "CREATE EXTENSION pg_peek" -c "CREATE TYPE pt AS (k int, v text)"
}

bench_cluster_stop() {
    cluster_stop "$DATA"
}

# psql on the current cluster: quiet, unaligned, stop at the first error.
psql_q() {
    "${AS_PG[@]}" "$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres \
        -d postgres -v ON_ERROR_STOP=1 "$@"
}

# Same, in the background, output to the log file $1 (for concurrent load).
# Use "$!" after it for the pid.
psql_bg() {
    local log=$1
    shift
    "${AS_PG[@]}" "$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres \
        -d postgres -v ON_ERROR_STOP=1 "$@" >"$log" 2>&1 &
}

# Wait until index $1 is ready (fails if it failed) and print the seconds
# since its creation (the create_index transaction's start).  Polls inside
# one statement: the registry is shared memory, so the view sees it change.
wait_index_ready() {
    psql_q <<SQL
DO \$\$
DECLARE s text;
BEGIN
  LOOP
    SELECT state INTO s FROM peek.indexes WHERE name = '$1';
    EXIT WHEN s = 'ready';
    IF s IS DISTINCT FROM 'hydrating' THEN RAISE EXCEPTION 'index $1 is %', s; END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;
END \$\$;
SELECT extract(epoch FROM clock_timestamp() - created_at) FROM peek.indexes WHERE name = '$1';
SQL
}

# The 1M-row data set most scenarios read, loaded once per cluster: a
# collection `points` of (k, 'value ' || k) with an index `points_by_k`, and
# the same rows in a table `bt` with a btree primary key.
ensure_points() {
    ((POINTS_LOADED)) && return 0
    progress "  loading $ROWS rows into the collection points and the table bt"
    psql_q >/dev/null <<SQL
SELECT peek.create_collection('points', 'pt');
SELECT count(peek.write('points', rows)) FROM (
  SELECT array_agg((g, 'value ' || g)::pt) AS rows
    FROM generate_series(1, $ROWS) g GROUP BY g / 100000) chunks;
SELECT peek.create_index('points_by_k', 'points', ARRAY['k']);
CREATE TABLE bt (k int PRIMARY KEY, v text);
INSERT INTO bt SELECT g, 'value ' || g FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE bt;
SQL
    wait_index_ready points_by_k >/dev/null
    POINTS_LOADED=1
}

# ---- pgbench -------------------------------------------------------------

# Write a pgbench script $WORK/$1.sql from stdin; print its path.
bench_script() {
    local f=$WORK/$1.sql
    cat >"$f"
    chmod 644 "$f"
    printf '%s\n' "$f"
}

# p50 and p99 (ms) of pgbench per-transaction logs (latency: field 3, µs).
# pgbench reads its clock lazily, so transactions far below a microsecond
# can log 0: the floor's (SELECT 1) percentiles are not meaningful.
percentiles() {
    awk '{ print $3 }' "$@" | sort -n | awk '
        { a[NR] = $1 }
        END { if (NR == 0) { print "NA NA"; exit }
              i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
              i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
              printf "%.3f %.3f\n", a[i50] / 1000, a[i99] / 1000 }'
}

# pgb NAME CLIENTS SCRIPT [PGBENCH_ARG...]: a prepared pgbench run of SECS
# seconds with per-transaction logs in $WORK/pgb/NAME, on the database
# $PGB_DB (default postgres); prints "tps p50 p99".
pgb() {
    local name=$1 clients=$2 script=$3 dir=$WORK/pgb/$1 out
    shift 3
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir" 2>/dev/null || true
    if ! out=$(cd "$dir" && "${AS_PG[@]}" "$PG_BIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres \
        -n -M prepared -c "$clients" -j "$clients" -T "$SECS" -f "$script" \
        --log --log-prefix="$dir/tx" "$@" "${PGB_DB:-postgres}" 2>&1); then
        printf 'ERROR: pgbench %s failed:\n%s\n' "$name" "$out" >&2
        return 1
    fi
    printf '%s %s\n' "$(awk '/^tps/ { print $3 }' <<<"$out")" "$(percentiles "$dir"/tx*)"
}

# The per-transaction logs of a pgb run.
pgb_logs() { printf '%s\n' "$WORK/pgb/$1"/tx*; }

# vis_percentiles LABEL [TABLE]: "p50 p99 samples" of the probe latencies
# (column ms) recorded under LABEL in TABLE (default bench_vis).
vis_percentiles() {
    psql_q -F' ' -c "SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3),
                            round(percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 3), count(*)
                       FROM ${2:-bench_vis} WHERE label = '$1'"
}

# ---- CSVs and statistics -------------------------------------------------

# csv_init FILE HEADER: start a CSV in $OUT, once per invocation (each
# mode's cluster appends to the same file).
declare -A CSV_STARTED=()
csv_init() {
    [[ -n ${CSV_STARTED[$1]:-} ]] && return 0
    printf '%s\n' "$2" >"$OUT/$1"
    CSV_STARTED[$1]=1
}

# csv_add FILE FIELD...: append one row.
csv_add() {
    local f=$1
    shift
    (IFS=,; printf '%s\n' "$*") >>"$OUT/$f"
}

# The values of column FIELD in rows matching every COLUMN=VALUE filter.
csv_values() {
    local f=$1 field=$2
    shift 2
    awk -F, -v field="$field" -v filters="$*" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
                  n = split(filters, fl, " ")
                  for (j = 1; j <= n; j++) { split(fl[j], kv, "="); fk[j] = col[kv[1]]; fv[j] = kv[2] }
                  next }
        { for (j = 1; j <= n; j++) if ($fk[j] != fv[j]) next; print $col[field] }' "$OUT/$f"
}

# "median min max" of numbers on stdin ("NA NA NA" if none).
median_min_max() {
    sort -g | awk '{ a[NR] = $1 }
        END { if (NR == 0) print "NA NA NA"; else print a[int((NR + 1) / 2)], a[1], a[NR] }'
}

# stats FILE FIELD FILTER...: "median min max" of a column over the runs.
stats() {
    local f=$1 field=$2
    shift 2
    csv_values "$f" "$field" "$@" | median_min_max
}

# median FILE FIELD FILTER...: the median alone.
median() {
    stats "$@" | cut -d' ' -f1
}

# ratio_stat FILE FIELD "NUM_FILTERS" "DEN_FILTERS": per-run ratios of FIELD
# (rows paired by their `run` column), as "median min max".
ratio_stat() {
    local f=$1 field=$2 num den
    # shellcheck disable=SC2086  # the filters are word lists on purpose
    num=$(csv_values "$f" "run" $3 | paste -d' ' - <(csv_values "$f" "$field" $3))
    # shellcheck disable=SC2086
    den=$(csv_values "$f" "run" $4 | paste -d' ' - <(csv_values "$f" "$field" $4))
    awk 'NR == FNR { n[$1] = $2; next }
         ($1 in n) && $2 + 0 != 0 { printf "%.4f\n", n[$1] / $2 }' \
        <(printf '%s\n' "$num") <(printf '%s\n' "$den") | median_min_max
}

# field_ratio FILE NUM_FIELD DEN_FIELD FILTER...: per-row ratios of two
# columns, as "median min max".
field_ratio() {
    local f=$1 num=$2 den=$3
    shift 3
    paste -d' ' <(csv_values "$f" "$num" "$@") <(csv_values "$f" "$den" "$@") |
        awk '$2 + 0 != 0 { printf "%.4f\n", $1 / $2 }' | median_min_max
}

# fmt PRECISION "median min max" [UNIT]: "mUNIT [lo–hi]".
fmt() {
    local p=$1 unit=${3:-} m lo hi
    read -r m lo hi <<<"$2"
    if [[ $m == NA ]]; then
        printf 'n/a'
    else
        LC_ALL=C printf "%.${p}f%s [%.${p}f–%.${p}f]" "$m" "$unit" "$lo" "$hi"
    fi
}

# verdict VALUE OP LIMIT (OP: le or ge): "met" or "MISSED".
verdict() {
    if [[ $1 == NA ]]; then
        printf 'not measured'
    elif awk -v v="$1" -v op="$2" -v l="$3" \
        'BEGIN { exit !((op == "le" && v <= l) || (op == "ge" && v >= l)) }'; then
        printf 'met'
    else
        printf '**MISSED**'
    fi
}

# ---- report --------------------------------------------------------------

# Append text to the scenario sections of the report.
report() { printf '%s\n' "$@" >>"$WORK/sections.md"; }

# target WHAT TARGET MEASURED VERDICT: one row of the report's target table.
target() {
    printf '| %s | %s | %s | %s |\n' "$@" >>"$WORK/targets.md"
}

# plot PNG GNUPLOT_COMMANDS: render a chart into $OUT/PNG.
plot() {
    local png=$1
    shift
    if ! gnuplot <<EOF 2>"$WORK/gnuplot.log"; then
set terminal pngcairo size 960,540 noenhanced font ",10"
set output '$OUT/$png'
set grid
set key outside right top
$*
EOF
        warn "gnuplot failed for $png: $(cat "$WORK/gnuplot.log")"
        return 0
    fi
    report "" "![$png]($png)"
}
