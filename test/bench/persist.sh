# shellcheck shell=bash
# Scenario 7, persist peeks: peek.persist_peek of `points` with limit 10 and
# in full, against the SQL that computes the same result over the shard table
# (consolidate diffs per row at the time, each row as often as its count).
# Both read at the same fixed time.  The full reads are wrapped in count(*)
# on both sides, so neither ships the rows to the client.

# shellcheck disable=SC2034  # read by scripts/bench
persist_modes="on off"

persist_run() {
    local mode=$1 shard as_of run q kind tps p50 p99 n_peek n_sql
    ensure_points
    csv_init persist.csv "mode,read,query,run,tps,p50_ms,p99_ms"
    read -r shard as_of < <(psql_q -F' ' -c "SELECT shard, upper - 1 FROM peek.collections WHERE name = 'points'")
    local consolidated="SELECT (s.data).* FROM (SELECT data, sum(diff) AS c FROM $shard
        WHERE time <= $as_of GROUP BY data HAVING sum(diff) > 0) s, generate_series(1, s.c)"
    bench_script persist-peek-limit <<<"SELECT * FROM peek.persist_peek(NULL::pt, 'points', $as_of, 10);" >/dev/null
    bench_script persist-sql-limit <<<"$consolidated LIMIT 10;" >/dev/null
    bench_script persist-peek-full <<<"SELECT count(*) FROM peek.persist_peek(NULL::pt, 'points', $as_of);" >/dev/null
    bench_script persist-sql-full <<<"SELECT count(*) FROM ($consolidated) x;" >/dev/null
    # the two must agree, or the comparison means nothing
    n_peek=$(psql_q -f "$WORK/persist-peek-full.sql")
    n_sql=$(psql_q -f "$WORK/persist-sql-full.sql")
    [[ $n_peek == "$n_sql" ]] || {
        printf 'ERROR: persist_peek returned %s rows, the SQL over %s %s\n' "$n_peek" "$shard" "$n_sql" >&2
        return 1
    }
    for kind in limit full; do
        for run in $(seq 1 "$REPEAT"); do
            for q in peek sql; do
                read -r tps p50 p99 < <(pgb "persist-$mode-$kind-$q-$run" 1 "$WORK/persist-$q-$kind.sql")
                csv_add persist.csv "$mode" "$kind" "$q" "$run" "$tps" "$p50" "$p99"
                progress "  $kind run=$run $(printf '%-4s' "$q") tps=$tps p50=${p50}ms"
            done
        done
    done
}

persist_report() {
    local f=persist.csv mode kind sel ratio
    report "" "## 7. Persist peeks" "" \
        "\`peek.persist_peek\` of the $ROWS-row collection at a fixed time, with \`limit 10\` and in full," \
        "against the SQL computing the same result over its shard table:" \
        "\`SELECT (s.data).* FROM (SELECT data, sum(diff) c FROM peek.shard_N WHERE time <= t GROUP BY data" \
        "HAVING sum(diff) > 0) s, generate_series(1, s.c)\` (the full reads count the rows on both sides;" \
        "the driver checks the counts agree).  One client; ratio = persist_peek tps / SQL tps, per run." "" \
        "| mode | read | persist_peek / SQL | persist_peek tps | SQL tps | persist_peek p50 ms | SQL p50 ms |" \
        "|---|---|---|---|---|---|---|"
    for mode in on off; do
        for kind in limit full; do
            sel="mode=$mode read=$kind"
            [[ -n $(csv_values $f run "$sel") ]] || continue
            ratio=$(ratio_stat $f tps "$sel query=peek" "$sel query=sql")
            report "| $(mode_name "$mode") | $([[ $kind == limit ]] && echo 'limit 10' || echo full) | **$(fmt 2 "$ratio" ×)** | $(fmt 1 "$(stats $f tps "$sel" query=peek)") | $(fmt 1 "$(stats $f tps "$sel" query=sql)") | $(median $f p50_ms "$sel" query=peek) | $(median $f p50_ms "$sel" query=sql) |"
        done
    done
    report "" "No target is set for persist peeks; the ratio is what a user gives up (or gains) against plain SQL over the shard."
}
