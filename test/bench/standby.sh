# shellcheck shell=bash
# Scenario: hot standbys (issue 14).  test/bench/standby_lag.pl starts its
# own primary and streaming standby (PostgreSQL::Test::Cluster) and prints
# commit-to-visible latency on the standby (a probe commits one row on the
# primary through dblink and peeks the index on the standby at the time
# peek.write returned), idle and under the ingest scenario's write load paced
# at STANDBY_RATE updates/s, the primary's own figure under the same load,
# and the aggregate point-lookup throughput of primary + standby against the
# primary alone.  The bench cluster stays up meanwhile, idle.

# shellcheck disable=SC2034  # read by scripts/bench
standby_modes="on off"
STANDBY_RATE=100000

standby_run() {
    local mode=$1 run dir out line where n p50 p99 load alone both
    local tap_perl=$PGXS_DIR/src/test/perl
    csv_init standby.csv "mode,run,where,probes,p50_ms,p99_ms,load_updates_s"
    csv_init standby_lookups.csv "mode,run,primary_alone_tps,together_tps"
    for run in $(seq 1 "$REPEAT"); do
        dir=$WORK/standby-$mode-$run
        "${AS_PG[@]}" mkdir -p "$dir"
        if ! (cd "$dir" && "${AS_PG[@]}" env "PATH=$PG_BIN:$PATH" "TESTDIR=$dir" \
            "PG_REGRESS=$PG_REGRESS" "PG_PEEK_INTERACTIVE=$mode" "PERL5LIB=$tap_perl:$ROOT/test/perl" \
            perl "$ROOT/test/bench/standby_lag.pl" "$SECS" "$STANDBY_RATE") >"$dir.log" 2>&1; then
            warn "standby_lag.pl failed (run $run, $(mode_name "$mode")): $(tail -n 20 "$dir.log")"
            continue
        fi
        # PostgreSQL::Test::Utils sends a script's stdout to its regress log
        out=$dir/tmp_check/log/regress_log_standby_lag
        while read -r line; do
            # "load, standby:  n=123 p50=4.1 ms p99=9.0 ms max=... (load: 99876 updates/s ...)"
            [[ $line =~ ^(idle|load),\ (standby|primary):\ +n=([0-9]+)\ p50=([0-9.]+)\ ms\ p99=([0-9.]+) ]] || continue
            where=${BASH_REMATCH[1]}_${BASH_REMATCH[2]} n=${BASH_REMATCH[3]}
            p50=${BASH_REMATCH[4]} p99=${BASH_REMATCH[5]} load=NA
            [[ $line =~ load:\ ([0-9]+)\ updates ]] && load=${BASH_REMATCH[1]}
            csv_add standby.csv "$mode" "$run" "$where" "$n" "$p50" "$p99" "$load"
            progress "  run $run: $line"
        done <"$out"
        line=$(grep '^point lookups' "$out" || true)
        if [[ $line =~ primary\ alone\ ([0-9]+)\ tps.*=\ ([0-9]+)\ tps\ together ]]; then
            alone=${BASH_REMATCH[1]} both=${BASH_REMATCH[2]}
            csv_add standby_lookups.csv "$mode" "$run" "$alone" "$both"
            progress "  run $run: $line"
        fi
    done
}

standby_report() {
    local mode where p99
    report "## Hot standbys" "" \
        "Commit on the primary to visible in an index peek on a streaming hot standby (\`test/bench/standby_lag.pl\`, ${SECS}s of probes every 10 ms), idle and while the primary ingests batched \`peek.write\`s of 5000 rows paced at $STANDBY_RATE updates/s; the primary's own probe under the same load for comparison. Then pgbench point lookups (\`index_peek\`, 4 clients per server) on the primary alone and on primary and standby at once: on this 2-core machine both servers share the same cores, so the aggregate shows the cost of serving from two servers, not a scale-out." "" \
        "| mode | where | p50 ms | p99 ms | load updates/s |" "|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values standby.csv p99_ms "mode=$mode") ]] || continue
        for where in idle_standby idle_primary load_standby load_primary; do
            report "| $(mode_name "$mode") | ${where/_/, } | $(fmt 1 "$(stats standby.csv p50_ms "mode=$mode" "where=$where")") | $(fmt 1 "$(stats standby.csv p99_ms "mode=$mode" "where=$where")") | $(fmt 0 "$(stats standby.csv load_updates_s "mode=$mode" "where=$where")") |"
        done
        p99=$(median standby.csv p99_ms "mode=$mode" "where=load_standby")
        target "standby commit-to-visible p99 under $STANDBY_RATE updates/s, $(mode_name "$mode")" "< 100 ms" \
            "$(fmt 1 "$(stats standby.csv p99_ms "mode=$mode" "where=load_standby")" " ms")" "$(verdict "$p99" le 100)"
    done
    report "" "| mode | primary alone tps | primary + standby tps | ratio |" "|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values standby_lookups.csv together_tps "mode=$mode") ]] || continue
        report "| $(mode_name "$mode") | $(fmt 0 "$(stats standby_lookups.csv primary_alone_tps "mode=$mode")") | $(fmt 0 "$(stats standby_lookups.csv together_tps "mode=$mode")") | $(fmt 2 "$(field_ratio standby_lookups.csv together_tps primary_alone_tps "mode=$mode")" "×") |"
    done
    report ""
}
