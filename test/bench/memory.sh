# shellcheck shell=bash
# Scenario 6, memory: DSA bytes per row of the `points_by_k` arrangement
# against heap + btree bytes per row of the same rows in `bt`.  Sizes are
# deterministic, so one measurement per mode.

# shellcheck disable=SC2034  # read by scripts/bench
memory_modes="on off"

memory_run() {
    local mode=$1
    ensure_points
    csv_init memory.csv "mode,rows,index_bytes,heap_bytes,btree_bytes"
    csv_add memory.csv "$mode" "$ROWS" "$(psql_q -c "
        SELECT bytes, pg_relation_size('bt'), pg_relation_size('bt_pkey')
          FROM peek.indexes WHERE name = 'points_by_k'" | tr '|' ,)"
}

memory_report() {
    local f=memory.csv mode arr pg ratio
    report "" "## 6. Memory" "" \
        "DSA bytes of the index \`points_by_k\` (\`peek.indexes.bytes\`) per row, against the heap" \
        "plus the btree primary key of the table \`bt\` holding the same $ROWS rows." "" \
        "| mode | arrangement bytes/row | heap + btree bytes/row | ratio |" "|---|---|---|---|"
    for mode in on off; do
        arr=$(csv_values $f index_bytes mode=$mode)
        [[ -n $arr ]] || continue
        pg=$(($(csv_values $f heap_bytes mode=$mode) + $(csv_values $f btree_bytes mode=$mode)))
        read -r arr pg ratio <<<"$(awk -v a="$arr" -v p="$pg" -v n="$ROWS" \
            'BEGIN { printf "%.1f %.1f %.2f", a / n, p / n, a / p }')"
        report "| $(mode_name "$mode") | $arr | $pg | ${ratio}× |"
        if [[ $mode == on ]]; then
            target "memory per row: arrangement vs heap + btree" "≤ 1.0×" \
                "$arr vs $pg bytes (${ratio}×)" "$(verdict "$ratio" le 1.0)"
        fi
    done
    return 0
}
