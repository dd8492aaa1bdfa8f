# shellcheck shell=bash
# Scenario 3, wake-ups: 100 indexes (one per collection) sealed continuously
# (one single-row peek.write per collection and commit, round after round),
# with 0, 1 and 10 peeks parked on the first one at a time that is never
# reached, so they stay parked.  Measures the wake-ups, dirty marks and
# re-examined peeks of the runtime that serves peeks (peek.runtimes) and its
# CPU time (/proc/<pid>/stat utime + stime), per second of sealing.
# In solo mode that runtime also does the maintenance, so every seal wakes it
# whatever is parked: measured for reference, the target is for split mode.

# shellcheck disable=SC2034  # read by scripts/bench
wakeups_modes="on off"
WAKE_INDEXES=100
WAKE_PARKED=(0 1 10)
FAR_FUTURE=1000000000000000

wakeups_setup() {
    psql_q >/dev/null <<SQL
SELECT peek.create_collection(n, 'pt'), peek.create_index(n || '_by_k', n, ARRAY['k'])
  FROM (SELECT format('w_%s', lpad(i::text, 3, '0')) n FROM generate_series(1, $WAKE_INDEXES) i) x;
CREATE TABLE bench_seal_runs (label text, rounds bigint, secs float8);
SQL
    psql_q >/dev/null <<'SQL'
CREATE PROCEDURE bench_seal_run(label text, secs float8, nidx int) LANGUAGE plpgsql AS $$
DECLARE r bigint := 0; t0 timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    r := r + 1;
    FOR i IN 1 .. nidx LOOP
      PERFORM peek.write(format('w_%s', lpad(i::text, 3, '0')), ARRAY[ROW(r::int, 'x')::pt]);
      COMMIT;
    END LOOP;
  END LOOP;
  INSERT INTO bench_seal_runs VALUES (label, r, extract(epoch FROM clock_timestamp() - t0));
END $$;
SQL
    wait_index_ready "w_$(printf '%03d' "$WAKE_INDEXES")_by_k" >/dev/null
    wait_index_ready w_001_by_k >/dev/null
}

# "wakeups dirty_marks peeks_reexamined cpu_ticks upper" of the runtime that
# serves peeks, and the upper of the watched index.
wake_counters() {
    local pid rest
    read -r pid rest < <(psql_q -F' ' -c "
        SELECT r.pid, r.wakeups, r.dirty_marks, r.peeks_reexamined, i.upper
          FROM peek.runtimes r, peek.indexes i
         WHERE r.role IN ('interactive', 'solo') AND i.name = 'w_001_by_k'")
    # fields 14 and 15 of /proc/<pid>/stat (after the parenthesised name)
    printf '%s %s\n' "$rest" "$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }')"
}

wakeups_run() {
    local mode=$1 parked run i pids=() before after hz run_secs w d x u c
    hz=$(getconf CLK_TCK)
    wakeups_setup
    csv_init wakeups.csv "mode,parked,run,secs,seals,wakeups,dirty_marks,reexamined,cpu_ms"
    for parked in "${WAKE_PARKED[@]}"; do
        pids=()
        for ((i = 0; i < parked; i++)); do
            psql_bg /dev/null -c "SET statement_timeout = '$((SECS * REPEAT + 60))s'" \
                -c "SELECT count(*) FROM peek.index_peek(NULL::pt, 'w_001_by_k', as_of => $FAR_FUTURE)"
            pids+=($!)
        done
        psql_q -c "DO \$\$ BEGIN
            WHILE (SELECT count(*) FROM peek.active_peeks WHERE object = 'w_001_by_k' AND state = 'waiting') < $parked
            LOOP PERFORM pg_sleep(0.01); END LOOP; END \$\$"
        for run in $(seq 1 "$REPEAT"); do
            before=$(wake_counters)
            psql_q -c "CALL bench_seal_run('$mode-$parked-$run', $SECS, $WAKE_INDEXES)"
            after=$(wake_counters)
            read -r run_secs < <(psql_q -c "SELECT secs FROM bench_seal_runs WHERE label = '$mode-$parked-$run'")
            # after - before: wakeups dirty_marks reexamined upper cpu_ticks
            read -r w d x u c < <(awk -v hz="$hz" '{ split($0, a, " ") }
                NR == 1 { for (i = 1; i <= 5; i++) b[i] = a[i] }
                NR == 2 { printf "%d %d %d %d %.0f\n", a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], (a[5] - b[5]) * 1000 / hz }' \
                <<<"$before"$'\n'"$after")
            csv_add wakeups.csv "$mode" "$parked" "$run" "$run_secs" "$u" "$w" "$d" "$x" "$c"
            progress "  parked=$parked run=$run: $u seals of w_001 in ${run_secs%.*}s; wakeups=$w dirty_marks=$d reexamined=$x cpu=${c}ms"
        done
        psql_q -c "SELECT count(pg_cancel_backend(pid)) FROM peek.active_peeks WHERE object = 'w_001_by_k'" >/dev/null
        for i in "${pids[@]}"; do wait "$i" || true; done
    done
}

wakeups_report() {
    local f=wakeups.csv mode parked sel w
    report "" "## 3. Wake-ups" "" \
        "$WAKE_INDEXES indexes (one per collection) sealed continuously, one single-row \`peek.write\` and commit" \
        "at a time, with 0, 1 and 10 peeks parked on the first index (\`w_001_by_k\`) at a time never reached." \
        "Counters of the runtime that serves peeks (\`peek.runtimes\`: interactive in split mode, solo in solo" \
        "mode) and its CPU time from \`/proc/<pid>/stat\`, per second of sealing." \
        "In solo mode that runtime also does all the maintenance, so every seal of every index wakes it:" \
        "shown for reference; the targets are for split mode." "" \
        "| mode | parked | seals of w_001 /s | wake-ups /s | wake-ups per seal of w_001 | dirty marks /s | peeks re-examined /s | runtime CPU ms/s |" \
        "|---|---|---|---|---|---|---|---|"
    : >"$WORK/wakeups.dat"
    for mode in on off; do
        for parked in "${WAKE_PARKED[@]}"; do
            sel="mode=$mode parked=$parked"
            [[ -n $(csv_values $f run "$sel") ]] || continue
            w=$(field_ratio $f wakeups secs "$sel")
            report "| $(mode_name "$mode") | $parked | $(fmt 1 "$(field_ratio $f seals secs "$sel")") | $(fmt 1 "$w") | $(fmt 2 "$(field_ratio $f wakeups seals "$sel")") | $(fmt 1 "$(field_ratio $f dirty_marks secs "$sel")") | $(fmt 1 "$(field_ratio $f reexamined secs "$sel")") | $(fmt 1 "$(field_ratio $f cpu_ms secs "$sel")") |"
            printf '%s %s %s %s\n' "$mode" "$parked" "${w%% *}" \
                "$(field_ratio $f seals secs "$sel" | cut -d' ' -f1)" >>"$WORK/wakeups.dat"
            if [[ $mode == on && $parked == 0 ]]; then
                target "wake-ups, split, nothing parked ($WAKE_INDEXES indexes sealing)" "0 /s" \
                    "$(fmt 1 "$w") /s" "$(verdict "${w%% *}" le 0)"
            elif [[ $mode == on ]]; then
                w=$(field_ratio $f wakeups seals "$sel")
                target "wake-ups, split, $parked parked: per seal of that index" "≤ 1.5 (∝ its seals, not to what is parked)" \
                    "$(fmt 2 "$w")" "$(verdict "${w%% *}" le 1.5)"
            fi
        done
    done
    awk '$1 == "on" { print $2, $3, $4 }' "$WORK/wakeups.dat" >"$WORK/wakeups_on.dat"
    awk '$1 == "off" { print $2, $3, $4 }' "$WORK/wakeups.dat" >"$WORK/wakeups_off.dat"
    # solo is woken by all maintenance: on its own axis, so split stays readable
    plot wakeups.png "
set title 'Wake-ups per second of the runtime that serves peeks, $WAKE_INDEXES indexes sealing'
set xlabel 'peeks parked on w_001_by_k'
set ylabel 'split: per second'
set y2label 'solo: wake-ups per second'
set key below
set xtics (0, 1, 10)
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
plot '$WORK/wakeups_on.dat' using 1:2 with linespoints lw 2 title 'split: interactive wake-ups', \
     '$WORK/wakeups_on.dat' using 1:3 with lines dt 2 lw 2 title 'split: seals of w_001_by_k', \
     '$WORK/wakeups_off.dat' using 1:2 axes x1y2 with linespoints lw 2 title 'solo wake-ups (right axis; it also maintains)'"
}
