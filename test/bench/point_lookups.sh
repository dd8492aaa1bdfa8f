# shellcheck shell=bash
# Scenario 1, point lookups: peek.index_peek by key, gated in the backend
# (pg_peek.fast_path on, the default) and routed through the serving runtime
# (off), against a prepared btree lookup on the same rows and against
# SELECT 1 (the protocol floor), with 1, 2 and 8 clients; and 100 random
# keys in one peek (keys => ARRAY[...]) against the btree's k = ANY(ARRAY[...])
# of the same 100 keys.  Runs of the queries are interleaved.

# shellcheck disable=SC2034  # read by scripts/bench
point_lookups_modes="on off"
POINT_CLIENTS=(1 2 8)

POINT_KEYS=100

# The runs measure the steady state: wait (up to 2 minutes) until the load's
# aftermath is over (fold workers folding the 1M-row write into the base,
# autovacuum of the shard and of bt), then checkpoint.  Without it the first
# runs after the load, at 1 client, took the stalls in turn (SELECT 1 at a
# tenth of its rate in one of them).
points_settle() {
    psql_q >/dev/null <<'SQL'
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  PERFORM pg_sleep(3);  -- a fold starts once the writes have paused
  WHILE EXISTS (SELECT 1 FROM pg_stat_activity
                 WHERE backend_type IN ('pg_peek fold', 'autovacuum worker'))
        AND clock_timestamp() < t0 + interval '120 s' LOOP
    PERFORM pg_sleep(0.2);
  END LOOP;
END $$;
CHECKPOINT;
SQL
}

point_lookups_run() {
    local mode=$1 clients run q tps p50 p99 i sets="" list=""
    ensure_points
    points_settle
    csv_init point_lookups.csv "mode,clients,query,run,tps,p50_ms,p99_ms"
    bench_script floor <<<"SELECT 1;" >/dev/null
    bench_script btree >/dev/null <<EOF
\\set k random(1, $ROWS)
SELECT k, v FROM bt WHERE k = :k;
EOF
    bench_script peek >/dev/null <<EOF
\\set k random(1, $ROWS)
SELECT k, v FROM peek.index_peek(NULL::pt, 'points_by_k', ROW(:k::int));
EOF
    # the same POINT_KEYS random keys in both, bound as int parameters
    for i in $(seq 1 "$POINT_KEYS"); do
        sets+="\\set k$i random(1, $ROWS)"$'\n'
        list+="${list:+, }:k$i::int"
    done
    bench_script anyk >/dev/null <<EOF
$sets
SELECT k, v FROM bt WHERE k = ANY(ARRAY[$list]);
EOF
    bench_script keys >/dev/null <<EOF
$sets
SELECT k, v FROM peek.index_peek(NULL::pt, 'points_by_k', keys => ARRAY[$list]);
EOF
    for clients in "${POINT_CLIENTS[@]}"; do
        for run in $(seq 1 "$REPEAT"); do
            for q in floor btree peek routed anyk keys; do
                # routed: the same peek with the fast path off
                read -r tps p50 p99 < <(PGOPTIONS=$([[ $q == routed ]] && echo '-c pg_peek.fast_path=off') \
                    pgb "lookup-$mode-$clients-$q-$run" "$clients" "$WORK/${q/routed/peek}.sql")
                csv_add point_lookups.csv "$mode" "$clients" "$q" "$run" "$tps" "$p50" "$p99"
                progress "  clients=$clients run=$run $(printf '%-6s' "$q") tps=${tps%.*} p50=${p50}ms p99=${p99}ms"
            done
        done
    done
}

point_lookups_report() {
    local f=point_lookups.csv mode clients ratio routed sel q p99_peek p99_btree
    report "" "## 1. Point lookups" "" \
        "\`index_peek\` by a random key via pgbench (\`-M prepared\`) against a prepared btree" \
        "\`SELECT k, v FROM bt WHERE k = \$1\` on the same $ROWS rows, and \`SELECT 1\` (the protocol floor)." \
        "index_peek runs twice: gated in the backend (\`pg_peek.fast_path = on\`, the default) and routed" \
        "through the serving runtime (\`off\`).  Runs of the queries are interleaved; ratios are taken per run." "" \
        "| mode | clients | peek / btree | routed / btree | index_peek tps | routed tps | btree tps | SELECT 1 tps | peek p50 / p99 ms | routed p50 / p99 ms | btree p50 / p99 ms |" \
        "|---|---|---|---|---|---|---|---|---|---|---|"
    : >"$WORK/lookups.dat"
    for mode in on off; do
        for clients in "${POINT_CLIENTS[@]}"; do
            sel="mode=$mode clients=$clients"
            ratio=$(ratio_stat $f tps "$sel query=peek" "$sel query=btree")
            routed=$(ratio_stat $f tps "$sel query=routed" "$sel query=btree")
            report "| $(mode_name "$mode") | $clients | **$(fmt 2 "$ratio" ×)** | $(fmt 2 "$routed" ×) | $(fmt 0 "$(stats $f tps "$sel" query=peek)") | $(fmt 0 "$(stats $f tps "$sel" query=routed)") | $(fmt 0 "$(stats $f tps "$sel" query=btree)") | $(fmt 0 "$(stats $f tps "$sel" query=floor)") | $(median $f p50_ms "$sel" query=peek) / $(median $f p99_ms "$sel" query=peek) | $(median $f p50_ms "$sel" query=routed) / $(median $f p99_ms "$sel" query=routed) | $(median $f p50_ms "$sel" query=btree) / $(median $f p99_ms "$sel" query=btree) |"
            if [[ $mode == on ]]; then
                target "point lookups, split, $clients client(s): index_peek / btree tps" "≥ 1.2×" \
                    "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge 1.2)"
                p99_peek=$(median $f p99_ms "$sel" query=peek)
                p99_btree=$(median $f p99_ms "$sel" query=btree)
                target "point lookups, split, $clients client(s): index_peek p99 vs btree p99" "no worse" \
                    "$p99_peek vs $p99_btree ms" "$(verdict "$p99_peek" le "$p99_btree")"
            fi
            printf '%s-%s' "$(mode_name "$mode")" "$clients" >>"$WORK/lookups.dat"
            for q in floor btree peek routed; do
                printf ' %s' "$(median $f tps "$sel" query=$q)" >>"$WORK/lookups.dat"
            done
            printf '\n' >>"$WORK/lookups.dat"
        done
    done
    report "" "### $POINT_KEYS keys in one peek" "" \
        "\`index_peek(..., keys => ARRAY[\$1, …, \$$POINT_KEYS])\` against the btree's" \
        "\`SELECT k, v FROM bt WHERE k = ANY(ARRAY[\$1, …, \$$POINT_KEYS])\`, the same $POINT_KEYS random keys bound" \
        "as \`int\` parameters in both (pgbench binds no array), interleaved with the runs above." "" \
        "| mode | clients | keys peek / = ANY | keys peek tps | = ANY tps | keys peek p50 / p99 ms | = ANY p50 / p99 ms |" \
        "|---|---|---|---|---|---|---|"
    for mode in on off; do
        for clients in "${POINT_CLIENTS[@]}"; do
            sel="mode=$mode clients=$clients"
            ratio=$(ratio_stat $f tps "$sel query=keys" "$sel query=anyk")
            report "| $(mode_name "$mode") | $clients | **$(fmt 2 "$ratio" ×)** | $(fmt 0 "$(stats $f tps "$sel" query=keys)") | $(fmt 0 "$(stats $f tps "$sel" query=anyk)") | $(median $f p50_ms "$sel" query=keys) / $(median $f p99_ms "$sel" query=keys) | $(median $f p50_ms "$sel" query=anyk) / $(median $f p99_ms "$sel" query=anyk) |"
            target "$POINT_KEYS keys in one peek, $(mode_name "$mode"), $clients client(s): index_peek keys / btree = ANY tps" "≥ 1.0×" \
                "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge 1.0)"
        done
    done
    report "" "pgbench reads its clock lazily: sub-microsecond \`SELECT 1\` latencies log as 0, so the floor's latencies are not shown."
    plot point_lookups.png "
set title 'Point lookups: median transactions per second by mode and clients'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'transactions per second'
set yrange [0:*]
plot '$WORK/lookups.dat' using 2:xtic(1) title 'SELECT 1', '' using 3 title 'btree', '' using 4 title 'index_peek', '' using 5 title 'index_peek, fast path off'"
}
