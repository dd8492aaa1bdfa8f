# shellcheck shell=bash
# Scenario 7, persist peeks: peek.persist_peek of a $ROWS-row collection
# `ppoints` (the rows of `points`) compacted to a base, with recent history
# after it (PERSIST_RECENT writes, each inserting a row and deleting one),
# with limit 10 and in full, against
#   * a plain table `ppoints_t` with the same rows: `SELECT * FROM t LIMIT
#     10` and `SELECT count(*) FROM t` (what a user compares with; the
#     targets, issue 11: >= 0.5x each), and
#   * the SQL that computes the same result over the shard table
#     (consolidate diffs per row at the time, each row as often as its count).
# All read at the same fixed time.  The full reads are wrapped in count(*),
# so none ships the rows to the client.

# shellcheck disable=SC2034  # read by scripts/bench
persist_modes="on off"
PERSIST_RECENT=${PERSIST_RECENT:-50}

ensure_ppoints() {
    ensure_points
    [[ -n $(psql_q -c "SELECT 1 FROM peek.collections WHERE name = 'ppoints'") ]] && return 0
    progress "  loading $ROWS rows into ppoints, compacting, $PERSIST_RECENT recent writes"
    psql_q >/dev/null <<SQL
SELECT peek.create_collection('ppoints', 'pt');
SELECT count(peek.write('ppoints', rows)) FROM (
  SELECT array_agg((k, v)::pt) AS rows FROM bt GROUP BY k / 100000) chunks;
SELECT peek.allow_compaction('ppoints', upper - 1) FROM peek.collections WHERE name = 'ppoints';
DO \$\$
BEGIN
  WHILE (SELECT since < upper - 1 FROM peek.collections WHERE name = 'ppoints') LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
END \$\$;
SELECT count(peek.write('ppoints', ARRAY[($ROWS + i, 'new ' || i)::pt], ARRAY[(i * 7, 'value ' || i * 7)::pt]))
  FROM generate_series(1, $PERSIST_RECENT) i;
CREATE TABLE ppoints_t AS SELECT * FROM peek.persist_peek(NULL::pt, 'ppoints');
VACUUM ANALYZE ppoints_t;
SQL
    # the fold left the loaded rows dead before the base: vacuumed, as
    # autovacuum would (the table is vacuumed too)
    psql_q -c "VACUUM ANALYZE $(psql_q -c "SELECT shard FROM peek.collections WHERE name = 'ppoints'")" >/dev/null
}

persist_run() {
    local mode=$1 shard as_of base_time run q kind tps p50 p99 n_peek n_sql n_table
    ensure_ppoints
    csv_init persist.csv "mode,read,query,run,tps,p50_ms,p99_ms"
    read -r shard as_of < <(psql_q -F' ' -c "SELECT shard, upper - 1 FROM peek.collections WHERE name = 'ppoints'")
    # the base (time -1) is the contents at base_time; the history after
    # as_of comes out of it, the recent updates up to as_of go in
    read -r base_time < <(psql_q -c "SELECT coalesce(base_time, since) FROM peek.objects WHERE name = 'ppoints'")
    local sign="CASE WHEN time < 0 THEN 1 WHEN time <= $base_time THEN -(time > $as_of)::int ELSE (time <= $as_of)::int END"
    local consolidated="SELECT (s.data).* FROM (SELECT data, sum(diff * $sign) AS c FROM $shard
        GROUP BY data HAVING sum(diff * $sign) > 0) s, generate_series(1, s.c)"
    bench_script persist-peek-limit <<<"SELECT * FROM peek.persist_peek(NULL::pt, 'ppoints', $as_of, 10);" >/dev/null
    bench_script persist-sql-limit <<<"$consolidated LIMIT 10;" >/dev/null
    bench_script persist-table-limit <<<"SELECT * FROM ppoints_t LIMIT 10;" >/dev/null
    bench_script persist-peek-full <<<"SELECT count(*) FROM peek.persist_peek(NULL::pt, 'ppoints', $as_of);" >/dev/null
    bench_script persist-sql-full <<<"SELECT count(*) FROM ($consolidated) x;" >/dev/null
    bench_script persist-table-full <<<"SELECT count(*) FROM ppoints_t;" >/dev/null
    # they must agree, or the comparison means nothing
    n_peek=$(psql_q -f "$WORK/persist-peek-full.sql")
    n_sql=$(psql_q -f "$WORK/persist-sql-full.sql")
    n_table=$(psql_q -f "$WORK/persist-table-full.sql")
    [[ $n_peek == "$n_sql" && $n_peek == "$n_table" ]] || {
        printf 'ERROR: persist_peek returned %s rows, the SQL over %s %s, the table %s\n' \
            "$n_peek" "$shard" "$n_sql" "$n_table" >&2
        return 1
    }
    for kind in limit full; do
        for run in $(seq 1 "$REPEAT"); do
            for q in peek table sql; do
                read -r tps p50 p99 < <(pgb "persist-$mode-$kind-$q-$run" 1 "$WORK/persist-$q-$kind.sql")
                csv_add persist.csv "$mode" "$kind" "$q" "$run" "$tps" "$p50" "$p99"
                progress "  $kind run=$run $(printf '%-5s' "$q") tps=$tps p50=${p50}ms"
            done
        done
    done
}

persist_report() {
    local f=persist.csv mode kind sel ratio ratio_sql what
    report "" "## 7. Persist peeks" "" \
        "\`peek.persist_peek\` of the $ROWS-row collection \`ppoints\`, compacted, with $PERSIST_RECENT recent writes" \
        "(one insert and one delete each) after its since, at a fixed time, with \`limit 10\` and in full, against a" \
        "plain table of the same rows (\`SELECT * FROM t LIMIT 10\`, \`SELECT count(*) FROM t\`) and against the SQL" \
        "computing the same result over its shard table:" \
        "\`SELECT (s.data).* FROM (SELECT data, sum(diff) c FROM peek.shard_N WHERE time <= t GROUP BY data" \
        "HAVING sum(diff) > 0) s, generate_series(1, s.c)\` (the full reads count the rows; the driver checks the" \
        "counts agree).  One client; ratios are persist_peek tps / other tps, per run." "" \
        "| mode | read | persist_peek / table | persist_peek / shard SQL | persist_peek tps | table tps | SQL tps | persist_peek p50 ms | table p50 ms |" \
        "|---|---|---|---|---|---|---|---|---|"
    for mode in on off; do
        for kind in limit full; do
            sel="mode=$mode read=$kind"
            [[ -n $(csv_values $f run "$sel") ]] || continue
            ratio=$(ratio_stat $f tps "$sel query=peek" "$sel query=table")
            ratio_sql=$(ratio_stat $f tps "$sel query=peek" "$sel query=sql")
            what=$([[ $kind == limit ]] && echo 'limit 10' || echo full)
            report "| $(mode_name "$mode") | $what | **$(fmt 2 "$ratio" ×)** | $(fmt 2 "$ratio_sql" ×) | $(fmt 1 "$(stats $f tps "$sel" query=peek)") | $(fmt 1 "$(stats $f tps "$sel" query=table)") | $(fmt 1 "$(stats $f tps "$sel" query=sql)") | $(median $f p50_ms "$sel" query=peek) | $(median $f p50_ms "$sel" query=table) |"
            if [[ $mode == on ]]; then
                target "persist peeks, split, $what: persist_peek / table tps" "≥ 0.5×" \
                    "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge 0.5)"
            fi
        done
    done
}
