# shellcheck shell=bash
# Scenario 7, persist peeks (issue 24 item 2): peek.persist_peek of a
# $ROWS-row collection `ppoints` (the rows of `points`), with limit 10 and
# in full, at its latest time, against a plain table `ppoints_t` with the
# same rows (`SELECT * FROM t LIMIT 10`, `SELECT count(*) FROM t`; targets:
# limit >= 0.5x, full >= 0.8x), in three states of its history, one after
# the other:
#   load     right after loading (10 writes of 100,000 rows), no
#            allow_compaction: only what the maintenance runtime does alone
#   u4000    allow_compaction to the load's last time, then 4,000 updates
#            (20 writes, each inserting 100 rows and deleting 100)
#   u100000  96,000 more (100,000 updates after the since in all)
# Each state waits for the runtime to move the base on (its writes paused;
# at most a minute, the time it took printed), records where the base
# stands, and rebuilds the table from the peek.  The full reads are wrapped in count(*), so none ships the
# rows to the client.

# shellcheck disable=SC2034  # read by scripts/bench
persist_modes="on off"

# writes from..to (each: 100 rows inserted, 100 of the loaded rows deleted)
persist_updates() {
    psql_q >/dev/null <<SQL
SELECT count(peek.write('ppoints',
         ARRAY(SELECT ($ROWS + j, 'new ' || j)::pt FROM generate_series(100 * (i - 1) + 1, 100 * i) j),
         ARRAY(SELECT (j, 'value ' || j)::pt FROM generate_series(100 * (i - 1) + 1, 100 * i) j)))
  FROM generate_series($1, $2) i;
SQL
}

# Bring ppoints to a state (see the top) and its table along.
persist_state() {
    case $1 in
        load)
            ensure_points
            psql_q >/dev/null <<SQL
SELECT peek.drop_collection(name) FROM peek.collections WHERE name = 'ppoints';
SELECT peek.create_collection('ppoints', 'pt');
SELECT count(peek.write('ppoints', rows)) FROM (
  SELECT array_agg((k, v)::pt) AS rows FROM bt GROUP BY k / 100000) chunks;
SQL
            ;;
        u4000)
            psql_q >/dev/null -c "SELECT peek.allow_compaction('ppoints', upper - 1) FROM peek.collections WHERE name = 'ppoints'"
            persist_updates 1 20
            ;;
        u100000) persist_updates 21 500 ;;
    esac
    # the runtime moves the base on alone once the writes pause: waited
    # for (at most a minute), the time it took reported
    local t0=$SECONDS
    psql_q >/dev/null <<SQL
DO \$\$
BEGIN
  FOR i IN 1 .. 1200 LOOP
    EXIT WHEN (SELECT coalesce(o.base_time, -1) >= c.upper - 1
                 FROM peek.collections c JOIN peek.objects o USING (name) WHERE name = 'ppoints');
    PERFORM pg_sleep(0.05);
  END LOOP;
END \$\$;
SQL
    progress "  state $1: the base caught up in $((SECONDS - t0)) s"
    psql_q >/dev/null <<SQL
DROP TABLE IF EXISTS ppoints_t;
CREATE TABLE ppoints_t AS SELECT * FROM peek.persist_peek(NULL::pt, 'ppoints');
VACUUM ANALYZE ppoints_t;
SQL
    # the folds left rows dead: vacuumed, as autovacuum would
    psql_q -c "VACUUM ANALYZE $(psql_q -c "SELECT shard FROM peek.collections WHERE name = 'ppoints'")" >/dev/null
}

persist_run() {
    local mode=$1 as_of state base run q kind tps p50 p99 n_peek n_table
    csv_init persist.csv "mode,state,read,query,run,tps,p50_ms,p99_ms"
    for state in load u4000 u100000; do
        persist_state $state
        read -r as_of base < <(psql_q -F' ' -c "SELECT c.upper - 1, o.base_time FROM peek.collections c JOIN peek.objects o USING (name) WHERE name = 'ppoints'")
        progress "  state $state: peeks at $as_of, the base at $base"
        bench_script persist-peek-limit <<<"SELECT * FROM peek.persist_peek(NULL::pt, 'ppoints', $as_of, 10);" >/dev/null
        bench_script persist-table-limit <<<"SELECT * FROM ppoints_t LIMIT 10;" >/dev/null
        bench_script persist-peek-full <<<"SELECT count(*) FROM peek.persist_peek(NULL::pt, 'ppoints', $as_of);" >/dev/null
        bench_script persist-table-full <<<"SELECT count(*) FROM ppoints_t;" >/dev/null
        # they must agree, or the comparison means nothing
        n_peek=$(psql_q -f "$WORK/persist-peek-full.sql")
        n_table=$(psql_q -f "$WORK/persist-table-full.sql")
        [[ $n_peek == "$n_table" ]] || {
            printf 'ERROR: persist_peek returned %s rows, the table %s\n' "$n_peek" "$n_table" >&2
            return 1
        }
        # interleaved: each run measures the peek and the table back to back
        for kind in limit full; do
            for run in $(seq 1 "$REPEAT"); do
                for q in peek table; do
                    read -r tps p50 p99 < <(pgb "persist-$mode-$state-$kind-$q-$run" 1 "$WORK/persist-$q-$kind.sql")
                    csv_add persist.csv "$mode" "$state" "$kind" "$q" "$run" "$tps" "$p50" "$p99"
                    progress "  $state $kind run=$run $(printf '%-5s' "$q") tps=$tps p50=${p50}ms"
                done
            done
        done
    done
}

persist_report() {
    local f=persist.csv mode state kind sel ratio what goal
    report "" "## 7. Persist peeks" "" \
        "\`peek.persist_peek\` of the $ROWS-row collection \`ppoints\` at its latest time, with \`limit 10\` and in full," \
        "against a plain table of the same rows (\`SELECT * FROM t LIMIT 10\`, \`SELECT count(*) FROM t\`), in three" \
        "states: right after loading with no compaction call (load), after \`allow_compaction\` and 4,000 updates" \
        "(u4000), and 100,000 (u100000).  One client; ratios are persist_peek tps / table tps, per run (interleaved)." "" \
        "| mode | state | read | persist_peek / table | persist_peek tps | table tps | persist_peek p50 ms | table p50 ms |" \
        "|---|---|---|---|---|---|---|---|"
    for mode in on off; do
        for state in load u4000 u100000; do
            for kind in limit full; do
                sel="mode=$mode state=$state read=$kind"
                [[ -n $(csv_values $f run "$sel") ]] || continue
                ratio=$(ratio_stat $f tps "$sel query=peek" "$sel query=table")
                what=$([[ $kind == limit ]] && echo 'limit 10' || echo full)
                goal=$([[ $kind == limit ]] && echo 0.5 || echo 0.8)
                report "| $(mode_name "$mode") | $state | $what | **$(fmt 2 "$ratio" ×)** | $(fmt 1 "$(stats $f tps "$sel" query=peek)") | $(fmt 1 "$(stats $f tps "$sel" query=table)") | $(median $f p50_ms "$sel" query=peek) | $(median $f p50_ms "$sel" query=table) |"
                if [[ $mode == on ]]; then
                    target "persist peeks, split, $state, $what: persist_peek / table tps" "≥ ${goal}×" \
                        "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge "$goal")"
                fi
            done
        done
    done
}
