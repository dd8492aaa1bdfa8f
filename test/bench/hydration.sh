# shellcheck shell=bash
# Scenario 5, hydration: rows per second building an index from the shard of
# `points` (peek.create_index until its state is 'ready') against CREATE
# INDEX on the table `bt` holding the same rows (default settings, so it may
# use parallel workers as a user's would).  Interleaved per run.

# shellcheck disable=SC2034  # read by scripts/bench
hydration_modes="on off"

hydration_run() {
    local mode=$1 run peek_s btree_s
    ensure_points
    csv_init hydration.csv "mode,run,rows,peek_s,create_index_s"
    for run in $(seq 1 "$REPEAT"); do
        # create_index commits first: the maintenance runtime starts at commit
        psql_q -c "SELECT peek.create_index('points_h', 'points', ARRAY['k'])" >/dev/null
        peek_s=$(wait_index_ready points_h)
        psql_q -c "SELECT peek.drop_index('points_h')" >/dev/null
        btree_s=$(psql_q <<'SQL'
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX bt_k ON bt (k);
SELECT extract(epoch FROM clock_timestamp() - :'t0');
SQL
)
        psql_q -c "DROP INDEX bt_k"
        csv_add hydration.csv "$mode" "$run" "$ROWS" "$peek_s" "$btree_s"
        progress "  run=$run create_index ${peek_s}s, CREATE INDEX ${btree_s}s"
    done
}

hydration_report() {
    local f=hydration.csv mode ratio
    report "" "## 5. Hydration" "" \
        "Rows per second building an index from a $ROWS-row shard (\`peek.create_index\` until" \
        "\`peek.indexes.state = 'ready'\`, timed from the index's \`created_at\`) against \`CREATE INDEX\`" \
        "on a table with the same rows.  Ratio = CREATE INDEX seconds / create_index seconds, per run." "" \
        "| mode | create_index rows/s | CREATE INDEX rows/s | create_index s | CREATE INDEX s | ratio |" \
        "|---|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $f run mode=$mode) ]] || continue
        ratio=$(field_ratio $f create_index_s peek_s mode=$mode)
        report "| $(mode_name "$mode") | $(fmt 0 "$(field_ratio $f rows peek_s mode=$mode)") | $(fmt 0 "$(field_ratio $f rows create_index_s mode=$mode)") | $(fmt 2 "$(stats $f peek_s mode=$mode)") | $(fmt 2 "$(stats $f create_index_s mode=$mode)") | **$(fmt 2 "$ratio" ×)** |"
        target "hydration, $(mode_name "$mode"): create_index vs CREATE INDEX rows/s" "≥ 1.0×" \
            "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge 1.0)"
    done
}
