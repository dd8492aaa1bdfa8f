# shellcheck shell=bash
# Scenario 2, read isolation: point-lookup latency (1 pgbench client on the
# index of `points`) idle, then while the maintenance side works hard: two
# sessions stream rewrites of existing keys (a retraction and an insertion
# per key, batched peek.write) into `points` itself and into two other
# indexed collections, allowing compaction as they go (the indexes every
# batch, the shards at most once a second), so merges and compaction run.
# "Idle" is measured once maintenance has caught up with the previous run
# (every index merged down to one batch).  The alternative a user has is
# measured under the same load: btree point lookups on the table `bt` while
# the first session rewrites the same keys there (UPDATE) instead.
# The chart shows per-bucket p99 over time for both modes.

# shellcheck disable=SC2034  # read by scripts/bench
isolation_modes="on off"
STREAM_BATCH=2500
BUCKET_MS=250

isolation_setup() {
    local noise=$((ROWS / 10))
    psql_q >/dev/null <<SQL
-- where each stream is in its key space: position p rewrites key p % keys + 1
-- for the (p / keys + 1)-th time
CREATE TABLE bench_stream (name text PRIMARY KEY, idx text, keys int, pos bigint NOT NULL DEFAULT 0);
CREATE TABLE bench_stream_runs (label text, updates bigint, secs float8, max_batch_ms float8);
INSERT INTO bench_stream VALUES ('points', 'points_by_k', $ROWS), ('bt', NULL, $ROWS),
  ('noise_1', 'noise_1_by_k', $noise), ('noise_2', 'noise_2_by_k', $noise);
SELECT peek.create_collection(n, 'pt'), peek.create_index(n || '_by_k', n, ARRAY['k'])
  FROM unnest(ARRAY['noise_1', 'noise_2']) n;
SELECT peek.write(n, array_agg((g, 'value ' || g)::pt))
  FROM unnest(ARRAY['noise_1', 'noise_2']) n, generate_series(1, $noise) g GROUP BY n;
SQL
    psql_q >/dev/null <<'SQL'
-- a key's value after r rewrites (r = 0: as loaded)
CREATE FUNCTION bench_val(k int, r bigint) RETURNS text IMMUTABLE LANGUAGE sql
  AS $$ SELECT CASE WHEN r = 0 THEN 'value ' || k ELSE 'value ' || k || '.' || r END $$;

CREATE PROCEDURE bench_stream_run(label text, secs float8, batch int, names text[]) LANGUAGE plpgsql AS $$
DECLARE s record; t bigint; n bigint := 0; t0 timestamptz := clock_timestamp();
        b0 timestamptz; max_ms float8 := 0; compacted timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    b0 := clock_timestamp();
    FOR s IN SELECT * FROM bench_stream WHERE name = ANY (names) ORDER BY name LOOP
      IF s.idx IS NULL THEN
        -- the table: the same rewrites as UPDATEs
        UPDATE bt SET v = bench_val(u.k, u.r + 1)
          FROM (SELECT (p % s.keys + 1)::int AS k, p / s.keys AS r
                  FROM generate_series(s.pos, s.pos + batch - 1) p) u
         WHERE bt.k = u.k;
      ELSE
        SELECT peek.write(s.name, array_agg(ROW(k, bench_val(k, r + 1))::pt),
                                  array_agg(ROW(k, bench_val(k, r))::pt)) INTO t
          FROM (SELECT (p % s.keys + 1)::int AS k, p / s.keys AS r
                  FROM generate_series(s.pos, s.pos + batch - 1) p) u;
        PERFORM peek.allow_compaction(s.idx, t);
        IF clock_timestamp() > compacted + interval '1 second' THEN
          PERFORM peek.allow_compaction(s.name, t);
        END IF;
      END IF;
      UPDATE bench_stream SET pos = pos + batch WHERE name = s.name;
      n := n + 2 * batch;
    END LOOP;
    IF clock_timestamp() > compacted + interval '1 second' THEN compacted := clock_timestamp(); END IF;
    COMMIT;
    max_ms := greatest(max_ms, extract(epoch FROM clock_timestamp() - b0) * 1000);
  END LOOP;
  INSERT INTO bench_stream_runs VALUES (label, n, extract(epoch FROM clock_timestamp() - t0), max_ms);
END $$;
SQL
    wait_index_ready noise_1_by_k >/dev/null
    wait_index_ready noise_2_by_k >/dev/null
}

# Wait (up to a minute) until maintenance has caught up: every index merged
# down to one batch, so that "idle" is idle.
wait_maintenance_idle() {
    psql_q >/dev/null <<'SQL'
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  WHILE EXISTS (SELECT 1 FROM peek.indexes WHERE batches > 1)
        AND clock_timestamp() < t0 + interval '60 s' LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SQL
}

# stream_load LABEL FIRST: both streams (the first into FIRST, points or bt)
# for a bit longer than a pgb run; sets STREAM_A and STREAM_B to their pids.
stream_load() {
    psql_bg "$WORK/stream-a.log" -c "CALL bench_stream_run('a-$1', $((SECS + 2)), $STREAM_BATCH, '{$2}')"
    STREAM_A=$!
    psql_bg "$WORK/stream-b.log" -c "CALL bench_stream_run('b-$1', $((SECS + 2)), $STREAM_BATCH, '{noise_1,noise_2}')"
    STREAM_B=$!
    sleep 1
}

# Wait for the streams (in this shell: they are its children).
stream_wait() {
    wait "$STREAM_A" || { cat "$WORK/stream-a.log" >&2; return 1; }
    wait "$STREAM_B" || { cat "$WORK/stream-b.log" >&2; return 1; }
}

# "updates/s longest_batch_ms" of the streams of LABEL.
stream_result() {
    psql_q -F' ' -c "SELECT round(sum(updates / secs)), round(max(max_batch_ms))
                       FROM bench_stream_runs WHERE label IN ('a-$1', 'b-$1')"
}

# timeline NAME PHASE RUN: per-bucket p50/p99 (ms) of a pgb run's log, appended
# to isolation_timeline.csv as seconds from the run's first transaction.
timeline() {
    local name=$1 tag=$2 logs
    mapfile -t logs < <(pgb_logs "$name")
    # log fields: client tx latency_us script epoch_s epoch_us
    # (times relative to the first transaction: awk prints big numbers inexactly)
    awk -v b="$BUCKET_MS" 'NR == 1 { e0 = $5 } { printf "%d %s\n", (($5 - e0) * 1000 + $6 / 1000) / b, $3 }' "${logs[@]}" |
        sort -k1,1n -k2,2n | awk -v b="$BUCKET_MS" -v tag="$tag" '
        function at(q,  i) { i = int(n * q); if (i < 1) i = 1; return v[i] / 1000 }
        function flush() { if (n) printf "%s,%.3f,%.3f,%.3f\n", tag, (cur - first) * b / 1000, at(0.5), at(0.99) }
        NR == 1 { first = $1; cur = $1 }
        $1 != cur { flush(); n = 0; cur = $1 }
        { v[++n] = $2 }
        END { flush() }' >>"$OUT/isolation_timeline.csv"
}

isolation_run() {
    local mode=$1 run tps p50 p99 ups maxms
    ensure_points
    isolation_setup
    csv_init isolation.csv "mode,run,phase,tps,p50_ms,p99_ms,ingest_updates_per_s,max_batch_ms"
    csv_init isolation_timeline.csv "mode,phase,run,t_s,p50_ms,p99_ms"
    bench_script iso-peek >/dev/null <<EOF
\\set k random(1, $ROWS)
SELECT k, v FROM peek.index_peek(NULL::pt, 'points_by_k', ROW(:k::int));
EOF
    bench_script iso-btree >/dev/null <<EOF
\\set k random(1, $ROWS)
SELECT k, v FROM bt WHERE k = :k;
EOF
    for run in $(seq 1 "$REPEAT"); do
        wait_maintenance_idle
        read -r tps p50 p99 < <(pgb "iso-$mode-idle-$run" 1 "$WORK/iso-peek.sql")
        csv_add isolation.csv "$mode" "$run" idle "$tps" "$p50" "$p99" 0 0
        timeline "iso-$mode-idle-$run" "$mode,idle,$run"
        progress "  run=$run idle: p50=${p50}ms p99=${p99}ms"

        # the streams start first and outlast the measured run
        stream_load "$run" points
        read -r tps p50 p99 < <(pgb "iso-$mode-load-$run" 1 "$WORK/iso-peek.sql")
        stream_wait
        read -r ups maxms < <(stream_result "$run")
        csv_add isolation.csv "$mode" "$run" load "$tps" "$p50" "$p99" "$ups" "$maxms"
        timeline "iso-$mode-load-$run" "$mode,load,$run"
        progress "  run=$run under $ups updates/s: p50=${p50}ms p99=${p99}ms (longest stream batch ${maxms}ms)"

        # the alternative: a btree on a table taking the same rewrites
        stream_load "bt-$run" bt
        read -r tps p50 p99 < <(pgb "iso-$mode-btree-$run" 1 "$WORK/iso-btree.sql")
        stream_wait
        read -r ups maxms < <(stream_result "bt-$run")
        csv_add isolation.csv "$mode" "$run" btree "$tps" "$p50" "$p99" "$ups" "$maxms"
        progress "  run=$run btree under $ups updates/s: p50=${p50}ms p99=${p99}ms"
    done
}

isolation_report() {
    local f=isolation.csv mode ratio vs_btree split_p99 solo_p99 vs_solo sel
    report "" "## 2. Read isolation" "" \
        "Point lookups (\`index_peek\` by a random key, 1 pgbench client, prepared) on the $ROWS-row index," \
        "idle and while two sessions stream batched rewrites ($STREAM_BATCH keys a batch: a retraction and" \
        "an insertion each) into the same collection and into two other indexed collections, allowing" \
        "compaction of the indexes every batch and of the shards at most once a second." \
        "The ingest rate is what the streams achieved during the run (both sessions together)." "" \
        "Idle is measured once every index has merged down to one batch.  The btree column is the" \
        "alternative a user has: point lookups on a table with a btree primary key holding the same rows," \
        "while the first session rewrites the same keys there by UPDATE (the second streams as before)." "" \
        "| mode | idle p50 / p99 ms | under load p50 / p99 ms | load p99 / idle p99 | ingest updates/s | longest stream batch ms | btree under load p50 / p99 ms | index p99 / btree p99 |" \
        "|---|---|---|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $f run mode=$mode) ]] || continue
        ratio=$(ratio_stat $f p99_ms "mode=$mode phase=load" "mode=$mode phase=idle")
        vs_btree=$(ratio_stat $f p99_ms "mode=$mode phase=load" "mode=$mode phase=btree")
        report "| $(mode_name "$mode") | $(median $f p50_ms mode=$mode phase=idle) / $(fmt 3 "$(stats $f p99_ms mode=$mode phase=idle)") | $(median $f p50_ms mode=$mode phase=load) / $(fmt 3 "$(stats $f p99_ms mode=$mode phase=load)") | **$(fmt 2 "$ratio" ×)** | $(fmt 0 "$(stats $f ingest_updates_per_s mode=$mode phase=load)") | $(median $f max_batch_ms mode=$mode phase=load) | $(median $f p50_ms mode=$mode phase=btree) / $(fmt 3 "$(stats $f p99_ms mode=$mode phase=btree)") | **$(fmt 2 "$vs_btree" ×)** |"
        if [[ $mode == on ]]; then
            target "isolation, split: p99 under load vs idle" "≤ 1.5×" \
                "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" le 1.5)"
            target "isolation, split: index_peek p99 vs btree p99 under the same load" "≤ 1.0×" \
                "$(fmt 2 "$vs_btree" ×)" "$(verdict "${vs_btree%% *}" le 1.0)"
        fi
    done
    split_p99=$(median $f p99_ms mode=on phase=load)
    solo_p99=$(median $f p99_ms mode=off phase=load)
    if [[ -n $split_p99 && -n $solo_p99 && $split_p99 != NA && $solo_p99 != NA ]]; then
        vs_solo=$(awk -v a="$solo_p99" -v b="$split_p99" 'BEGIN { printf "%.2f", a / b }')
        report "" "Solo p99 under load / split p99 under load (medians): **${vs_solo}×**."
        target "isolation: solo p99 / split p99 under the same load" "≥ 2×" "${vs_solo}× ($solo_p99 / $split_p99 ms)" \
            "$(verdict "$vs_solo" ge 2)"
    fi
    report "" "Per-${BUCKET_MS} ms buckets of every run are in \`isolation_timeline.csv\`; the chart shows run 1."
    for sel in on,load off,load on,idle off,idle; do
        awk -F, -v want="$sel,1" 'NR > 1 && $1 "," $2 "," $3 == want { print $4, $6 }' \
            "$OUT/isolation_timeline.csv" >"$WORK/tl_${sel/,/_}.dat"
    done
    plot isolation.png "
set title 'Point-lookup p99 per ${BUCKET_MS} ms while maintenance works (run 1)'
set xlabel 'seconds into the run'
set ylabel 'p99 latency (ms)'
set logscale y
plot '$WORK/tl_on_load.dat' with linespoints lw 2 title 'split, under load', \
     '$WORK/tl_off_load.dat' with linespoints lw 2 title 'solo, under load', \
     '$WORK/tl_on_idle.dat' with lines dt 2 title 'split, idle', \
     '$WORK/tl_off_idle.dat' with lines dt 2 title 'solo, idle'"
}
