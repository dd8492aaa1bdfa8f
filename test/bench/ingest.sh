# shellcheck shell=bash
# Scenario 4, ingest.
#  * Updates per second absorbed into an index through batched peek.write
#    (append + advance, one commit per batch), counted until the index has
#    caught up with the last seal, against INSERTs of the same batches into a
#    table with a btree primary key.
#  * Commit-to-visible: a probe commits one row with peek.write and times an
#    index peek at that time (which waits until the index has it), idle and
#    while the bulk ingest runs, and while the ingest is paced at several
#    offered rates (INGEST_RATES updates/s), so the rate where visibility
#    breaks down shows.
#  * Capture: write TPS of a pgbench
#    upsert workload on a captured table (with an index on its collection)
#    against the same workload on an uncaptured table, and commit-to-visible
#    of a probe row through the index under that load.

# shellcheck disable=SC2034  # read by scripts/bench
ingest_modes="on off"
INGEST_BATCH=5000
INGEST_RATES="50000 100000 150000 200000"

ingest_setup() {
    psql_q >/dev/null <<'SQL'
SELECT peek.create_collection('ing', 'pt');
SELECT peek.create_index('ing_by_k', 'ing', ARRAY['k']);
SELECT peek.create_collection('vis', 'pt');
SELECT peek.create_index('vis_by_k', 'vis', ARRAY['k']);
CREATE TABLE ing_t (k int PRIMARY KEY, v text);
CREATE TABLE bench_runs (label text, updates bigint, secs float8);
CREATE TABLE bench_vis (label text, ms float8);

-- Batched appends for secs seconds, at most rate updates/s (0: as fast as
-- they go), then wait for the index to catch up.
CREATE PROCEDURE bench_ingest_peek(label text, secs float8, batch int, k0 int, rate float8 DEFAULT 0) LANGUAGE plpgsql AS $$
DECLARE t bigint; n bigint := 0; t0 timestamptz := clock_timestamp(); due timestamptz;
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    SELECT peek.write('ing', array_agg(ROW(k, 'value ' || k)::pt)) INTO t
      FROM generate_series(k0 + n, k0 + n + batch - 1) k;
    COMMIT;
    n := n + batch;
    due := t0 + n / nullif(rate, 0) * interval '1 second';
    IF due > clock_timestamp() THEN
      PERFORM pg_sleep(extract(epoch FROM due - clock_timestamp()));
    END IF;
  END LOOP;
  WHILE coalesce((SELECT upper FROM peek.indexes WHERE name = 'ing_by_k'), 0) <= t LOOP
    PERFORM pg_sleep(0.001);
  END LOOP;
  INSERT INTO bench_runs VALUES (label, n, extract(epoch FROM clock_timestamp() - t0));
END $$;

CREATE PROCEDURE bench_ingest_table(label text, secs float8, batch int, k0 int) LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; t0 timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    INSERT INTO ing_t SELECT k, 'value ' || k FROM generate_series(k0 + n, k0 + n + batch - 1) k;
    COMMIT;
    n := n + batch;
  END LOOP;
  INSERT INTO bench_runs VALUES (label, n, extract(epoch FROM clock_timestamp() - t0));
END $$;

-- Commit one row, then time an index peek at its time (it waits for the index).
CREATE PROCEDURE bench_visibility(label text, secs float8, k0 int) LANGUAGE plpgsql AS $$
DECLARE t bigint; k int := k0; t0 timestamptz := clock_timestamp(); t1 timestamptz;
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    k := k + 1;
    t := peek.write('vis', ARRAY[ROW(k, 'probe')::pt]);
    COMMIT;
    t1 := clock_timestamp();
    PERFORM count(*) FROM peek.index_peek(NULL::pt, 'vis_by_k', ROW(k), t);
    INSERT INTO bench_vis VALUES (label, extract(epoch FROM clock_timestamp() - t1) * 1000);
    COMMIT;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SQL
}

# "updates secs" of the run recorded under LABEL.
run_result() { psql_q -F' ' -c "SELECT updates, secs FROM bench_runs WHERE label = '$1'"; }

# ingest_at MODE RUN RATE K0: commit-to-visible under ingest offered at RATE
# updates/s, appended to ingest_rates.csv with the rate achieved.
ingest_at() {
    local mode=$1 run=$2 rate=$3 k0=$4 probe u s p50 p99 n
    psql_bg "$WORK/vis-$mode-$run-$rate.log" -c "CALL bench_visibility('rate-$rate-$run', $SECS, $((k0 + 50000000)))"
    probe=$!
    psql_q -c "CALL bench_ingest_peek('rate-$rate-$run', $SECS, $INGEST_BATCH, $k0, $rate)"
    wait "$probe" || { cat "$WORK/vis-$mode-$run-$rate.log" >&2; return 1; }
    read -r p50 p99 n < <(vis_percentiles "rate-$rate-$run")
    read -r u s < <(run_result "rate-$rate-$run")
    csv_add ingest_rates.csv "$mode" "$run" "$rate" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u / s }')" "$p50" "$p99" "$n"
    progress "  run=$run offered $rate updates/s: commit-to-visible p50=${p50}ms p99=${p99}ms"
}

ingest_run() {
    local mode=$1 run k0 probe u s p50 p99 n rate i
    ingest_setup
    csv_init ingest.csv "mode,run,kind,updates,secs"
    csv_init visibility.csv "mode,run,phase,p50_ms,p99_ms,samples"
    csv_init ingest_rates.csv "mode,run,offered,achieved,p50_ms,p99_ms,samples"
    for run in $(seq 1 "$REPEAT"); do
        k0=$((run * 100000000))
        psql_q -c "CALL bench_visibility('idle-$run', $SECS, $k0)"
        read -r p50 p99 n < <(vis_percentiles "idle-$run")
        csv_add visibility.csv "$mode" "$run" idle "$p50" "$p99" "$n"
        progress "  run=$run commit-to-visible idle: p50=${p50}ms p99=${p99}ms ($n probes)"

        psql_bg "$WORK/vis-$mode-$run.log" -c "CALL bench_visibility('load-$run', $SECS, $((k0 + 50000000)))"
        probe=$!
        psql_q -c "CALL bench_ingest_peek('peek-$run', $SECS, $INGEST_BATCH, $k0)"
        wait "$probe" || { cat "$WORK/vis-$mode-$run.log" >&2; return 1; }
        read -r p50 p99 n < <(vis_percentiles "load-$run")
        csv_add visibility.csv "$mode" "$run" ingest "$p50" "$p99" "$n"
        read -r u s < <(run_result "peek-$run")
        csv_add ingest.csv "$mode" "$run" peek "$u" "$s"
        progress "  run=$run peek.write ingest: $u updates in ${s}s; commit-to-visible under it p50=${p50}ms p99=${p99}ms"

        psql_q -c "CALL bench_ingest_table('table-$run', $SECS, $INGEST_BATCH, $k0)"
        read -r u s < <(run_result "table-$run")
        csv_add ingest.csv "$mode" "$run" table "$u" "$s"
        progress "  run=$run table INSERT: $u rows in ${s}s"

        i=1
        for rate in $INGEST_RATES; do
            ingest_at "$mode" "$run" "$rate" $((k0 + i * 10000000))
            i=$((i + 1))
        done
    done
    capture_run "$mode"
}

# ---- capture -------------------------------------------------------------

capture_setup() {
    psql_q >/dev/null <<'SQL'
CREATE TABLE cap_t (k int PRIMARY KEY, v text);
CREATE TABLE plain_t (k int PRIMARY KEY, v text);
SELECT peek.create_source('cap', 'cap_t');
SELECT peek.create_index('cap_by_k', 'cap', ARRAY['k']);

-- Commit a fresh row into the captured table, then poll the index by its key
-- until it shows (up to 10 s, recorded as is so a miss shows).  A source's rows
-- are of its table's row type.
CREATE PROCEDURE bench_capture_visibility(label text, secs float8, k0 int) LANGUAGE plpgsql AS $$
DECLARE k int := k0; t0 timestamptz := clock_timestamp(); t1 timestamptz;
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    k := k + 1;
    INSERT INTO cap_t VALUES (k, 'probe');
    COMMIT;
    t1 := clock_timestamp();
    WHILE NOT EXISTS (SELECT 1 FROM peek.index_peek(NULL::cap_t, 'cap_by_k', ROW(k)))
          AND clock_timestamp() < t1 + interval '10 seconds' LOOP
      PERFORM pg_sleep(0.0005);
    END LOOP;
    INSERT INTO bench_vis VALUES (label, extract(epoch FROM clock_timestamp() - t1) * 1000);
    COMMIT;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SQL
    wait_index_ready cap_by_k >/dev/null
}

capture_run() {
    local mode=$1 run table tps p50 p99 n probe
    csv_init capture.csv "mode,run,table,tps,p50_ms,p99_ms"
    # The ingest runs leave millions of fresh rows: vacuum them and checkpoint
    # first, so that neither table's runs share the cluster with that work
    # (autovacuum would start on them in the middle of the capture runs).
    psql_q >/dev/null <<SQL
VACUUM ing_t;
VACUUM $(psql_q -c "SELECT string_agg(shard::text, ', ') FROM peek.collections WHERE name IN ('ing', 'vis')");
CHECKPOINT;
SQL
    capture_setup
    for table in cap_t plain_t; do
        bench_script "upsert-$table" >/dev/null <<EOF
\\set k random(1, $ROWS)
INSERT INTO $table VALUES (:k, md5(:k::text)) ON CONFLICT (k) DO UPDATE SET v = md5($table.v);
EOF
    done
    for run in $(seq 1 "$REPEAT"); do
        for table in plain_t cap_t; do
            if [[ $table == cap_t ]]; then
                psql_bg "$WORK/capvis-$mode-$run.log" \
                    -c "CALL bench_capture_visibility('capture-$run', $SECS, $((2000000000 - 1000000 * (run + 1))))"
                probe=$!
            fi
            read -r tps p50 p99 < <(pgb "capture-$mode-$table-$run" 2 "$WORK/upsert-$table.sql")
            csv_add capture.csv "$mode" "$run" "$table" "$tps" "$p50" "$p99"
            progress "  run=$run upserts on $table: tps=${tps%.*}"
        done
        wait "$probe" || { cat "$WORK/capvis-$mode-$run.log" >&2; return 1; }
        read -r p50 p99 n < <(vis_percentiles "capture-$run")
        csv_add visibility.csv "$mode" "$run" capture "$p50" "$p99" "$n"
        progress "  run=$run captured commit-to-visible p50=${p50}ms p99=${p99}ms ($n probes)"
    done
}

# ---- report --------------------------------------------------------------

ingest_report() {
    local mode f=ingest.csv v=visibility.csv c=capture.csv ratio p99 rate
    report "" "## 4. Ingest" "" \
        "Updates per second absorbed into an index through \`peek.write\` in batches of $INGEST_BATCH rows" \
        "(one commit per batch), counted until the index's upper has passed the last batch, against" \
        "\`INSERT\` of the same batches into a table with a btree primary key." \
        "A probe meanwhile commits one row every 10 ms through \`peek.write\` and times an index peek at" \
        "that row's time (it waits until the index has it): commit-to-visible, idle and under the ingest." "" \
        "| mode | index updates/s | table rows/s | ratio | commit-to-visible idle p50 / p99 ms | under ingest p50 / p99 ms |" \
        "|---|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $f run mode=$mode) ]] || continue
        ratio=$(paste -d' ' <(csv_values $f updates mode=$mode kind=peek) <(csv_values $f secs mode=$mode kind=peek) \
            <(csv_values $f updates mode=$mode kind=table) <(csv_values $f secs mode=$mode kind=table) |
            awk '{ printf "%.4f\n", ($1 / $2) / ($3 / $4) }' | median_min_max)
        report "| $(mode_name "$mode") | $(fmt 0 "$(field_ratio $f updates secs mode=$mode kind=peek)") | $(fmt 0 "$(field_ratio $f updates secs mode=$mode kind=table)") | $(fmt 2 "$ratio" ×) | $(median $v p50_ms mode=$mode phase=idle) / $(median $v p99_ms mode=$mode phase=idle) | $(median $v p50_ms mode=$mode phase=ingest) / $(median $v p99_ms mode=$mode phase=ingest) |"
    done
    report "" "No target is set for append ingest; the ratio shows the price of a time-versioned, durable index against a plain table."
    report "" "Commit-to-visible (the same probe) while the ingest is paced at offered rates:" "" \
        "| mode | offered updates/s | achieved updates/s | p50 ms | p99 ms |" "|---|---|---|---|---|"
    for mode in on off; do
        for rate in $INGEST_RATES; do
            [[ -n $(csv_values ingest_rates.csv run mode=$mode offered=$rate) ]] || continue
            report "| $(mode_name "$mode") | $rate | $(fmt 0 "$(stats ingest_rates.csv achieved mode=$mode offered=$rate)") | $(median ingest_rates.csv p50_ms mode=$mode offered=$rate) | $(fmt 3 "$(stats ingest_rates.csv p99_ms mode=$mode offered=$rate)") |"
        done
    done
    p99=$(median ingest_rates.csv p99_ms mode=on offered=150000)
    [[ -z $p99 ]] || target "ingest, split: commit-to-visible p99 at 150k updates/s" "≤ 20 ms" "$p99 ms" "$(verdict "$p99" le 20)"
    report "" "### Capture" ""
    report "A pgbench upsert workload (2 clients, random keys in 1..$ROWS) on a table captured by" \
        "\`peek.create_source\` with an index on its collection, against the same workload on an" \
        "uncaptured table, interleaved per run.  Meanwhile a probe commits a fresh row into the" \
        "captured table every 10 ms and polls the index by its key until it shows." "" \
        "| mode | captured / uncaptured TPS | captured TPS | uncaptured TPS | commit-to-visible p50 / p99 ms |" \
        "|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $c run mode=$mode) ]] || continue
        ratio=$(ratio_stat $c tps "mode=$mode table=cap_t" "mode=$mode table=plain_t")
        p99=$(median $v p99_ms mode=$mode phase=capture)
        report "| $(mode_name "$mode") | **$(fmt 2 "$ratio" ×)** | $(fmt 0 "$(stats $c tps mode=$mode table=cap_t)") | $(fmt 0 "$(stats $c tps mode=$mode table=plain_t)") | $(median $v p50_ms mode=$mode phase=capture) / $p99 |"
        if [[ $mode == on ]]; then
            target "capture, split: write TPS captured vs uncaptured" "≥ 0.9×" "$(fmt 2 "$ratio" ×)" \
                "$(verdict "${ratio%% *}" ge 0.9)"
            target "capture, split: commit-to-visible p99 under load" "< 50 ms" "$p99 ms" "$(verdict "$p99" le 50)"
        fi
    done
}
