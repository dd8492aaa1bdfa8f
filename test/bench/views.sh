# shellcheck shell=bash
# Scenario 9, views: maintained views (peek.create_view) over a captured
# table, each figure against a baseline measured in the same run.
#  * Creation: create_view of a grouped aggregate over a source of ROWS rows
#    until peek.views shows it ready and caught up (lag 0), against CREATE
#    MATERIALIZED VIEW of the same query over the table.  Interleaved.
#    Reported with it: the first write's commit-to-visible after creation.
#  * Writer TPS: pgbench clients, each transaction an UPDATE of one row and
#    an INSERT of one, on three tables of ROWS rows (groups of about 100
#    rows): one captured with three views over its source (the grouped
#    aggregate, a filter and a join with a captured table of the groups,
#    one row a group), one captured with no view, and one in a
#    database of its own (so the sources' slots skip its WAL early) with a
#    plpgsql trigger keeping the same aggregate in a summary table.  A
#    fourth, plain table in that database (no capture, no trigger) is the
#    ceiling of any maintenance done after the writers commit: the writers
#    of the table with views do at least its work, so views / trigger
#    cannot pass plain / trigger.  Runs
#    interleaved, each run starting with the next table; after each, the
#    time until the sources and views caught up is recorded (not counted in
#    the TPS; the report shows the TPS counting it too).
#  * Commit-to-visible: under the same write load on the table with views,
#    a probe commits a row into a group of its own and polls the aggregate
#    view by index_peek until the group's count shows it (separate runs, so
#    that the polling does not weigh on the TPS runs), with the writers
#    unpaced and paced at VIEWS_PACED_TPS.
#  * Reads: one group's aggregate by index_peek on the view's index against
#    the SQL aggregate over the table with a btree on the group key.
#  * Maintenance CPU per input update: a fixed number of single-row UPDATE
#    transactions on a captured table of VIEWS_SMALL and of VIEWS_BIG rows
#    with the grouped view over it (groups of 100 rows in both), once the
#    view learned its groups after its first round (wait_learned), the
#    maintenance runtime's utime + stime (/proc/<pid>/stat) from before
#    them until the view caught up.  Interleaved.
#  * State, after the view's first round and its learning: its groups'
#    states, private memory of the maintenance runtime (memory contexts'
#    totals through pg_log_backend_memory_contexts, read from the server
#    log), and its
#    input's arrangement by the group key in DSA (peek.dataflow_operators
#    bytes), per output row, with the DSA bytes of the aggregate view's
#    index (peek.indexes.bytes) per row.

# shellcheck disable=SC2034  # read by scripts/bench
views_modes="on off"
VIEWS_CLIENTS=2
VIEWS_SMALL=100000
VIEWS_UPDATES=10000
# commit-to-visible is measured under the writers unpaced and paced at this rate
VIEWS_PACED_TPS=2000

# The aggregate the views keep and the trigger maintains, over FROM $1.
views_agg_query() { printf 'SELECT g, count(*) AS n, sum(v) AS s FROM %s GROUP BY g' "$1"; }

# views_table NAME ROWS [DB]: a table of ROWS rows in groups of about 100
# (g in 0 .. ROWS/100 - 1), v in 0 .. 999, with a btree on g.
views_table() {
    psql_q -d "${3:-postgres}" >/dev/null <<SQL
CREATE TABLE $1 (id bigserial PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO $1 (g, v) SELECT i % ($2 / 100), (i::bigint * 7919) % 1000 FROM generate_series(1, $2) i;
CREATE INDEX ${1}_g ON $1 (g);
VACUUM ANALYZE $1;
SQL
}

# views_source TABLE: capture TABLE as TABLE_src; prints its row type once loaded.
views_source() {
    psql_q >/dev/null 2>&1 -c "SELECT peek.create_source('${1}_src', '$1')"
    psql_q <<SQL
DO \$\$
BEGIN
  WHILE (SELECT state FROM peek.collections WHERE name = '${1}_src') IS DISTINCT FROM 'ready' LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
END \$\$;
SELECT row_type FROM peek.collections WHERE name = '${1}_src';
SQL
}

# Wait until the view $1 is ready and caught up with its input; print the
# seconds since its creation (the create_view transaction's start).
wait_view_ready() {
    psql_q <<SQL
DO \$\$
DECLARE s text; l bigint;
BEGIN
  LOOP
    SELECT state, lag INTO s, l FROM peek.views WHERE name = '$1';
    EXIT WHEN s = 'ready' AND l = 0;
    IF s NOT IN ('hydrating', 'pending', 'ready', 'retrying') THEN RAISE EXCEPTION 'view $1 is %', s; END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;
END \$\$;
SELECT extract(epoch FROM clock_timestamp() - created_at) FROM peek.views WHERE name = '$1';
SQL
}

# Wait until every source has decoded the WAL written so far and every view
# has caught up with its input; print the seconds it took.
wait_caught_up() {
    psql_q <<'SQL'
SELECT clock_timestamp() AS t0 \gset
DO $$
DECLARE lsn bigint := pg_current_wal_insert_lsn() - '0/0';
BEGIN
  WHILE EXISTS (SELECT 1 FROM peek.collections WHERE source IS NOT NULL AND upper < lsn)
     OR EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0) LOOP
    IF EXISTS (SELECT 1 FROM peek.views WHERE state = 'failed') THEN
      RAISE EXCEPTION 'a view failed';
    END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;
END $$;
SELECT extract(epoch FROM clock_timestamp() - :'t0');
SQL
}

# Wait until no view is learning its groups between rounds (a lazy view's,
# after its hydration: src/dataflow/learn.c); print the seconds it took.
wait_learned() {
    psql_q <<'SQL'
SELECT clock_timestamp() AS t0 \gset
DO $$
BEGIN
  WHILE EXISTS (SELECT 1 FROM peek.dataflow_operators WHERE learning) LOOP
    PERFORM pg_sleep(0.005);
  END LOOP;
END $$;
SELECT extract(epoch FROM clock_timestamp() - :'t0');
SQL
}

# The pid of the runtime that does the maintenance.
maintenance_pid() {
    psql_q -c "SELECT pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo')"
}

# utime + stime of process $1, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# groups_bytes MODE: bytes of every grouped view's groups in the
# maintenance runtime: the totals of its "pg_peek view groups" memory
# contexts and their children, which it logs on
# pg_log_backend_memory_contexts (into the server log of MODE's cluster).
groups_bytes() {
    local pid log=$WORK/server-$1.log from
    pid=$(maintenance_pid)
    from=$(($(wc -l <"$log") + 1))
    psql_q -c "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null
    # the runtime logs them at its next interrupt check
    for _ in $(seq 1 100); do
        tail -n +"$from" "$log" | grep -q "\[$pid\].*Grand total" && break
        sleep 0.1
    done
    tail -n +"$from" "$log" | grep "\[$pid\]" |
        awk '/ pg_peek view group(s|s keys): / { sub(/.*: /, ""); s += $1 } END { print s + 0 }'
}

views_setup() {
    local rt
    progress "  loading four tables of $ROWS rows (captured with views, captured, with a trigger, plain)"
    views_table vt_views "$ROWS"
    views_table vt_nov "$ROWS"
    psql_q -c "CREATE DATABASE vtrig" >/dev/null
    views_table vt_trig "$ROWS" vtrig
    views_table vt_plain "$ROWS" vtrig
    rt=$(views_source vt_views)
    VIEWS_ROW_TYPE=$rt
    # the join's other input: one row per group, captured too (one time line)
    psql_q >/dev/null <<SQL
CREATE TABLE vt_groups (g int PRIMARY KEY, label text NOT NULL);
INSERT INTO vt_groups SELECT i, 'group ' || i FROM generate_series(0, $ROWS / 100 - 1) i;
SQL
    views_source vt_groups >/dev/null
    views_source vt_nov >/dev/null
    psql_q -d vtrig >/dev/null <<SQL
CREATE TABLE vt_sum AS $(views_agg_query vt_trig);
ALTER TABLE vt_sum ADD PRIMARY KEY (g);
CREATE FUNCTION vt_sum_maintain() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE left_n bigint;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE vt_sum SET n = n - 1, s = s - OLD.v WHERE g = OLD.g RETURNING n INTO left_n;
    IF left_n = 0 THEN
      DELETE FROM vt_sum WHERE g = OLD.g;
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO vt_sum VALUES (NEW.g, 1, NEW.v)
      ON CONFLICT (g) DO UPDATE SET n = vt_sum.n + 1, s = vt_sum.s + excluded.s;
  END IF;
  RETURN NULL;
END \$\$;
CREATE TRIGGER vt_sum_maintain AFTER INSERT OR UPDATE OR DELETE ON vt_trig
  FOR EACH ROW EXECUTE FUNCTION vt_sum_maintain();
VACUUM ANALYZE vt_sum;
SQL
    psql_q >/dev/null <<SQL
CREATE TABLE bench_views_vis (label text, ms float8);
-- Commit a row into the probe group -1 of vt_views, then poll the aggregate
-- view by index_peek until the group's count shows it (up to 10 s,
-- recorded as is so that a miss shows).
CREATE PROCEDURE bench_view_visibility(label text, secs float8) LANGUAGE plpgsql AS \$\$
DECLARE n bigint := coalesce((SELECT count(*) FROM vt_views WHERE g = -1), 0);
        t0 timestamptz := clock_timestamp(); t1 timestamptz;
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
    INSERT INTO vt_views (g, v) VALUES (-1, 1);
    COMMIT;
    n := n + 1;
    t1 := clock_timestamp();
    WHILE coalesce((SELECT p.n FROM peek.index_peek(NULL::vt_agg, 'vt_agg_by_g', ROW(-1)) p), 0) < n
          AND clock_timestamp() < t1 + interval '10 seconds' LOOP
      PERFORM pg_sleep(0.0005);
    END LOOP;
    INSERT INTO bench_views_vis VALUES (label, extract(epoch FROM clock_timestamp() - t1) * 1000);
    COMMIT;
    PERFORM pg_sleep(0.01);
  END LOOP;
END \$\$;
-- n single-row UPDATE transactions on random rows of table t (ids 1 .. rows).
CREATE PROCEDURE bench_view_updates(t regclass, rows bigint, n int) LANGUAGE plpgsql AS \$\$
BEGIN
  FOR i IN 1 .. n LOOP
    EXECUTE format('UPDATE %s SET v = (v + 1) %% 1000 WHERE id = \$1', t)
      USING 1 + floor(random() * rows)::bigint;
    COMMIT;
  END LOOP;
END \$\$;
SQL
}

# The three views over vt_views and the aggregate's index.
views_create() {
    local src="peek.persist_peek(NULL::$VIEWS_ROW_TYPE, 'vt_views_src')"
    psql_q >/dev/null <<SQL
SELECT peek.create_view('vt_agg', \$q\$$(views_agg_query "$src")\$q\$);
SELECT peek.create_view('vt_filter', \$q\$SELECT id, g, v FROM $src WHERE v < 100\$q\$);
SELECT peek.create_view('vt_join', \$q\$SELECT t.id, t.v, d.label FROM vt_views t JOIN vt_groups d ON d.g = t.g\$q\$);
SQL
    wait_view_ready vt_agg >/dev/null
    psql_q -c "SELECT peek.create_index('vt_agg_by_g', 'vt_agg', ARRAY['g'])" >/dev/null
    wait_index_ready vt_agg_by_g >/dev/null
    wait_caught_up >/dev/null
}

# The first write after vt_new is ready: a row into a group of its own,
# committed, then the view (its PostgreSQL view, the latest time) polled
# until it shows it; prints the seconds from the commit.  The row goes.
first_write_visible() {
    psql_q <<'SQL'
INSERT INTO vt_views (g, v) VALUES (-2, 1);
SELECT clock_timestamp() AS t0 \gset
DO $$
BEGIN
  WHILE NOT EXISTS (SELECT 1 FROM vt_new WHERE g = -2) LOOP
    PERFORM pg_sleep(0.005);
  END LOOP;
END $$;
SELECT extract(epoch FROM clock_timestamp() - :'t0');
DELETE FROM vt_views WHERE g = -2;
SQL
}

views_creation() {
    local mode=$1 run peek_s mv_s src="peek.persist_peek(NULL::$VIEWS_ROW_TYPE, 'vt_views_src')"
    csv_init views_create.csv "mode,run,rows,create_view_s,matview_s,first_write_s"
    for run in $(seq 1 "$REPEAT"); do
        # create_view commits first: the maintenance runtime starts at commit
        psql_q -c "SELECT peek.create_view('vt_new', \$q\$$(views_agg_query "$src")\$q\$)" >/dev/null
        peek_s=$(wait_view_ready vt_new)
        first_s=$(first_write_visible)
        psql_q -c "SELECT peek.drop_view('vt_new')" >/dev/null
        mv_s=$(psql_q <<SQL
SELECT clock_timestamp() AS t0 \gset
CREATE MATERIALIZED VIEW vt_mv AS $(views_agg_query vt_views);
SELECT extract(epoch FROM clock_timestamp() - :'t0');
SQL
)
        psql_q -c "DROP MATERIALIZED VIEW vt_mv"
        csv_add views_create.csv "$mode" "$run" "$ROWS" "$peek_s" "$mv_s" "$first_s"
        progress "  run=$run create_view ${peek_s}s, CREATE MATERIALIZED VIEW ${mv_s}s, first write visible after ${first_s}s"
    done
}

views_writers() {
    local mode=$1 run table rate tps p50 p99 n probe catchup pace order groups=$((ROWS / 100))
    csv_init views_writers.csv "mode,run,table,tps,p50_ms,p99_ms,catchup_s"
    csv_init views_visibility.csv "mode,run,rate,tps,p50_ms,p99_ms,samples"
    for table in vt_views vt_nov vt_trig vt_plain; do
        bench_script "views-write-$table" >/dev/null <<EOF
\\set id random(1, $ROWS)
\\set g random(0, $((groups - 1)))
\\set v random(0, 999)
BEGIN;
UPDATE $table SET v = :v WHERE id = :id;
INSERT INTO $table (g, v) VALUES (:g, :v);
END;
EOF
    done
    for run in $(seq 1 "$REPEAT"); do
        # each run starts with the next table, so that none always goes first
        order=(vt_views vt_nov vt_trig vt_plain vt_views vt_nov vt_trig)
        for table in "${order[@]:$(((run - 1) % 4)):4}"; do
            read -r tps p50 p99 < <(PGB_DB=$([[ $table == vt_trig || $table == vt_plain ]] && echo vtrig || echo postgres) \
                pgb "views-$mode-$table-$run" "$VIEWS_CLIENTS" "$WORK/views-write-$table.sql" --max-tries=10)
            catchup=$(wait_caught_up)
            csv_add views_writers.csv "$mode" "$run" "$table" "$tps" "$p50" "$p99" "$catchup"
            progress "  run=$run writers on $table: tps=${tps%.*} p99=${p99}ms, caught up ${catchup}s after"
        done
        for rate in full "$VIEWS_PACED_TPS"; do
            psql_bg "$WORK/viewsvis-$mode-$run-$rate.log" -c "CALL bench_view_visibility('views-$run-$rate', $SECS)"
            probe=$!
            pace=()
            [[ $rate == full ]] || pace=(--rate="$rate")
            read -r tps p50 p99 < <(pgb "views-$mode-vis-$run-$rate" "$VIEWS_CLIENTS" "$WORK/views-write-vt_views.sql" \
                --max-tries=10 "${pace[@]}")
            wait "$probe" || { cat "$WORK/viewsvis-$mode-$run-$rate.log" >&2; return 1; }
            wait_caught_up >/dev/null
            read -r p50 p99 n < <(vis_percentiles "views-$run-$rate" bench_views_vis)
            csv_add views_visibility.csv "$mode" "$run" "$rate" "$tps" "$p50" "$p99" "$n"
            progress "  run=$run commit-to-visible under ${tps%.*} tps (offered: $rate): p50=${p50}ms p99=${p99}ms ($n probes)"
        done
    done
}

views_reads() {
    local mode=$1 run q tps p50 p99 groups=$((ROWS / 100))
    csv_init views_reads.csv "mode,run,query,tps,p50_ms,p99_ms"
    bench_script views-read-peek >/dev/null <<EOF
\\set g random(0, $((groups - 1)))
SELECT n, s FROM peek.index_peek(NULL::vt_agg, 'vt_agg_by_g', ROW(:g::int));
EOF
    bench_script views-read-sql >/dev/null <<EOF
\\set g random(0, $((groups - 1)))
SELECT count(*), sum(v) FROM vt_views WHERE g = :g;
EOF
    bench_script views-read-floor <<<"SELECT 1;" >/dev/null
    psql_q -c "VACUUM ANALYZE vt_views" >/dev/null
    for run in $(seq 1 "$REPEAT"); do
        for q in floor peek sql; do
            read -r tps p50 p99 < <(pgb "views-$mode-read-$q-$run" "$VIEWS_CLIENTS" "$WORK/views-read-$q.sql")
            csv_add views_reads.csv "$mode" "$run" "$q" "$tps" "$p50" "$p99"
            progress "  run=$run one group's aggregate by $q: tps=${tps%.*} p99=${p99}ms"
        done
    done
}

# The captured tables of VIEWS_SMALL and VIEWS_BIG rows with the grouped
# view over each, the state they take, then the CPU per update, interleaved.
views_cpu() {
    local mode=$1 run size rows pid c0 c1 catchup before after rt big=$((ROWS * 10))
    csv_init views_cpu.csv "mode,run,rows,updates,cpu_s,catchup_s"
    csv_init views_state.csv "mode,rows,view_rows,groups_bytes,index_rows,index_bytes,arrangement_bytes"
    # the tables of the other figures go: their slots would decode these updates too
    psql_q >/dev/null <<'SQL'
SELECT peek.drop_view(name) FROM peek.views;
DROP DATABASE vtrig;
SELECT peek.drop_source(name) FROM peek.collections WHERE source IS NOT NULL;
SQL
    for size in small big; do
        rows=$VIEWS_SMALL
        [[ $size == small ]] || rows=$big
        progress "  loading a captured table of $rows rows and its grouped view"
        before=$(groups_bytes "$mode")
        views_table "vc_$size" "$rows"
        rt=$(views_source "vc_$size")
        psql_q -c "SELECT peek.create_view('vc_${size}_agg', \$q\$$(views_agg_query "peek.persist_peek(NULL::$rt, 'vc_${size}_src')")\$q\$)" >/dev/null
        wait_view_ready "vc_${size}_agg" >/dev/null
        psql_q -c "SELECT peek.create_index('vc_${size}_by_g', 'vc_${size}_agg', ARRAY['g'])" >/dev/null
        wait_index_ready "vc_${size}_by_g" >/dev/null
        # a first write: the view's first round builds its groups and arrangement,
        # and the view learns its groups between rounds
        psql_q -c "UPDATE vc_$size SET v = (v + 1) % 1000 WHERE id = 1" >/dev/null
        wait_caught_up >/dev/null
        wait_learned >/dev/null
        after=$(groups_bytes "$mode")
        csv_add views_state.csv "$mode" "$rows" "$(psql_q -c "
            SELECT v.rows, $after - $before, i.rows, i.bytes,
                   (SELECT coalesce(sum(o.bytes), 0) FROM peek.dataflow_operators o WHERE o.view = v.name)
              FROM peek.views v, peek.indexes i
             WHERE v.name = 'vc_${size}_agg' AND i.name = 'vc_${size}_by_g'" | tr '|' ,)"
    done
    psql_q -c "CHECKPOINT" >/dev/null
    wait_caught_up >/dev/null
    for run in $(seq 1 "$REPEAT"); do
        for size in small big; do
            rows=$VIEWS_SMALL
            [[ $size == small ]] || rows=$big
            pid=$(maintenance_pid)
            c0=$(cpu_ticks "$pid")
            psql_q -c "CALL bench_view_updates('vc_$size', $rows, $VIEWS_UPDATES)"
            catchup=$(wait_caught_up)
            c1=$(cpu_ticks "$pid")
            [[ $(maintenance_pid) == "$pid" ]] || { warn "the maintenance runtime restarted"; return 1; }
            csv_add views_cpu.csv "$mode" "$run" "$rows" "$VIEWS_UPDATES" \
                "$(awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }')" "$catchup"
            progress "  run=$run $VIEWS_UPDATES updates on $rows rows: maintenance CPU $((c1 - c0))/$(getconf CLK_TCK) s, caught up ${catchup}s after"
        done
    done
}

views_run() {
    local mode=$1
    views_setup
    views_creation "$mode"
    views_create
    views_writers "$mode"
    views_reads "$mode"
    views_cpu "$mode"
}

# ---- report --------------------------------------------------------------

# views_sustained MODE: per run, the TPS with views counting the time the
# views took to catch up after the run (TPS * SECS / (SECS + catch-up)) over
# the TPS with no view, as "median min max".
views_sustained() {
    local w=views_writers.csv
    awk -v secs="$SECS" 'NR == FNR { n[$1] = $2; next }
         ($1 in n) && n[$1] + 0 != 0 { printf "%.4f\n", $2 * secs / (secs + $3) / n[$1] }' \
        <(paste -d' ' <(csv_values $w run mode="$1" table=vt_nov) <(csv_values $w tps mode="$1" table=vt_nov)) \
        <(paste -d' ' <(csv_values $w run mode="$1" table=vt_views) <(csv_values $w tps mode="$1" table=vt_views) \
            <(csv_values $w catchup_s mode="$1" table=vt_views)) | median_min_max
}

views_report() {
    local mode ratio trig ceiling p99 reads cr cpu small big rate
    local w=views_writers.csv c=views_create.csv r=views_reads.csv u=views_cpu.csv s=views_state.csv
    big=$((ROWS * 10))
    report "" "## 9. Maintained views" "" \
        "Three tables of $ROWS rows (\`id bigserial\` primary key, \`g\` in groups of about 100 rows with a" \
        "btree, \`v\`): \`vt_views\`, captured (\`peek.create_source\`) with three views over its source —" \
        "the aggregate \`$(views_agg_query src)\`, a filter (\`WHERE v < 100\`) and a join" \
        "with \`vt_groups\` (one row a group, captured too: \`FROM vt_views t JOIN vt_groups d ON d.g = t.g\`)" \
        "— \`vt_nov\`, captured with no view, and" \
        "\`vt_trig\`, in a database of its own, with a plpgsql row trigger keeping the same aggregate in a" \
        "summary table, and \`vt_plain\` beside it, neither captured nor triggered: the writers of \`vt_views\`" \
        "do at least its work, so its TPS over the trigger's (the ceiling column) bounds views / trigger." \
        "Writers: $VIEWS_CLIENTS pgbench clients, each transaction an \`UPDATE\` of a random row" \
        "and an \`INSERT\`, runs interleaved, ratios per run; after each run the wait until the sources and views" \
        "caught up is recorded (not counted in the TPS; the third column counts it: TPS × ${SECS} s / (${SECS} s + catch-up))." "" \
        "| mode | views / no view | views / trigger | ceiling: plain / trigger | counting the views' catch-up, views / no view | views TPS | no view TPS | trigger TPS | plain TPS | views caught up after (s) |" \
        "|---|---|---|---|---|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $w run mode=$mode) ]] || continue
        ratio=$(ratio_stat $w tps "mode=$mode table=vt_views" "mode=$mode table=vt_nov")
        trig=$(ratio_stat $w tps "mode=$mode table=vt_views" "mode=$mode table=vt_trig")
        ceiling=$(ratio_stat $w tps "mode=$mode table=vt_plain" "mode=$mode table=vt_trig")
        report "| $(mode_name "$mode") | **$(fmt 2 "$ratio" ×)** | **$(fmt 2 "$trig" ×)** | $(fmt 2 "$ceiling" ×) | $(fmt 2 "$(views_sustained "$mode")" ×) | $(fmt 0 "$(stats $w tps mode=$mode table=vt_views)") | $(fmt 0 "$(stats $w tps mode=$mode table=vt_nov)") | $(fmt 0 "$(stats $w tps mode=$mode table=vt_trig)") | $(fmt 0 "$(stats $w tps mode=$mode table=vt_plain)") | $(fmt 2 "$(stats $w catchup_s mode=$mode table=vt_views)") |"
        if [[ $mode == on ]]; then
            target "views, split: writer TPS with three views (aggregate, filter, join) / no view" "≥ 0.8×" \
                "$(fmt 2 "$ratio" ×)" "$(verdict "${ratio%% *}" ge 0.8)"
            target "views, split: writer TPS with three views / plpgsql trigger keeping the aggregate" "≥ 2×" \
                "$(fmt 2 "$trig" ×) (the plain table's ceiling: $(fmt 2 "$ceiling" ×))" "$(verdict "${trig%% *}" ge 2)"
        fi
    done
    report "" "Commit-to-visible: in further runs of the same writers on \`vt_views\`, unpaced and paced at" \
        "$VIEWS_PACED_TPS TPS (\`pgbench --rate\`), a probe commits a row into a group of its own every 10 ms and" \
        "polls the aggregate view by \`index_peek\` on its index until the group's count shows it (up to 10 s)." "" \
        "| mode | writers offered | writers TPS | p50 ms | p99 ms |" "|---|---|---|---|---|"
    for mode in on off; do
        for rate in full "$VIEWS_PACED_TPS"; do
            [[ -n $(csv_values views_visibility.csv run mode=$mode rate=$rate) ]] || continue
            report "| $(mode_name "$mode") | $rate | $(fmt 0 "$(stats views_visibility.csv tps mode=$mode rate=$rate)") | $(fmt 2 "$(stats views_visibility.csv p50_ms mode=$mode rate=$rate)") | $(fmt 2 "$(stats views_visibility.csv p99_ms mode=$mode rate=$rate)") |"
        done
        p99=$(median views_visibility.csv p99_ms mode=$mode rate=full)
        if [[ $mode == on && -n $p99 ]]; then
            target "views, split: commit-to-visible p99 of the aggregate by index_peek under the writers" "≤ 50 ms" \
                "p50 $(median views_visibility.csv p50_ms mode=$mode rate=full) ms, p99 $p99 ms (at $VIEWS_PACED_TPS TPS offered: p99 $(median views_visibility.csv p99_ms mode=$mode rate="$VIEWS_PACED_TPS") ms)" \
                "$(verdict "$p99" le 50)"
        fi
    done
    report "" "Reads: one random group's aggregate by \`index_peek\` on the view's index against" \
        "\`SELECT count(*), sum(v) FROM vt_views WHERE g = \$1\` (btree on \`g\`, groups of about 100 rows)," \
        "$VIEWS_CLIENTS pgbench clients, prepared, interleaved with \`SELECT 1\` (the protocol floor)." "" \
        "| mode | index_peek / SQL | index_peek TPS | SQL TPS | SELECT 1 TPS | index_peek p50 / p99 ms | SQL p50 / p99 ms |" \
        "|---|---|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $r run mode=$mode) ]] || continue
        reads=$(ratio_stat $r tps "mode=$mode query=peek" "mode=$mode query=sql")
        report "| $(mode_name "$mode") | **$(fmt 2 "$reads" ×)** | $(fmt 0 "$(stats $r tps mode=$mode query=peek)") | $(fmt 0 "$(stats $r tps mode=$mode query=sql)") | $(fmt 0 "$(stats $r tps mode=$mode query=floor)") | $(median $r p50_ms mode=$mode query=peek) / $(median $r p99_ms mode=$mode query=peek) | $(median $r p50_ms mode=$mode query=sql) / $(median $r p99_ms mode=$mode query=sql) |"
        if [[ $mode == on ]]; then
            target "views, split: one group's aggregate, index_peek / SQL over a btree" "≥ 10×" \
                "$(fmt 2 "$reads" ×)" "$(verdict "${reads%% *}" ge 10)"
        fi
    done
    report "" "Creation: \`create_view\` of the aggregate over the source of $ROWS rows until \`peek.views\`" \
        "shows it ready with lag 0 (from its \`created_at\`), against \`CREATE MATERIALIZED VIEW\` of the same" \
        "query over the table.  Ratio = CREATE MATERIALIZED VIEW seconds / create_view seconds, per run." \
        "Then the first write: a row inserted into a group of its own, from its commit until the view shows it" \
        "(the view's first round after its hydration).  No other view reads the source yet: each creation builds" \
        "the arrangement of the source by \`g\` that its groups read." "" \
        "| mode | ratio | create_view s | CREATE MATERIALIZED VIEW s | first write visible after (s) |" "|---|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $c run mode=$mode) ]] || continue
        cr=$(field_ratio $c matview_s create_view_s mode=$mode)
        report "| $(mode_name "$mode") | **$(fmt 2 "$cr" ×)** | $(fmt 2 "$(stats $c create_view_s mode=$mode)") | $(fmt 2 "$(stats $c matview_s mode=$mode)") | $(fmt 2 "$(stats $c first_write_s mode=$mode)") |"
        target "views, $(mode_name "$mode"): creating the aggregate over $ROWS rows, create_view / CREATE MATERIALIZED VIEW" "≥ 1.0×" \
            "$(fmt 2 "$cr" ×)" "$(verdict "${cr%% *}" ge 1.0)"
    done
    report "" "Maintenance CPU: $VIEWS_UPDATES single-row \`UPDATE\` transactions (one session) on a captured" \
        "table of $VIEWS_SMALL and of $big rows with the aggregate view over it (groups of 100 rows in both)," \
        "once the view learned its groups (between rounds, after its first)," \
        "the maintenance runtime's utime + stime from before them until the view caught up, per update" \
        "(decoding included; the other tables' sources are dropped first).  Interleaved." "" \
        "| mode | $big / $VIEWS_SMALL rows | µs per update, $VIEWS_SMALL rows | µs per update, $big rows |" \
        "|---|---|---|---|"
    for mode in on off; do
        [[ -n $(csv_values $u run mode=$mode) ]] || continue
        cpu=$(ratio_stat $u cpu_s "mode=$mode rows=$big" "mode=$mode rows=$VIEWS_SMALL")
        small=$(csv_values $u cpu_s mode=$mode rows=$VIEWS_SMALL | awk -v n="$VIEWS_UPDATES" '{ print $1 * 1e6 / n }' | median_min_max)
        report "| $(mode_name "$mode") | **$(fmt 2 "$cpu" ×)** | $(fmt 0 "$small") | $(fmt 0 "$(csv_values $u cpu_s mode=$mode rows=$big | awk -v n="$VIEWS_UPDATES" '{ print $1 * 1e6 / n }' | median_min_max)") |"
        target "views, $(mode_name "$mode"): maintenance CPU per update, $big vs $VIEWS_SMALL input rows" "within 2×" \
            "$(fmt 2 "$cpu" ×)" "$(awk -v r="${cpu%% *}" 'BEGIN { exit !(r <= 2 && r >= 0.5) }' && echo met || echo '**MISSED**')"
    done
    report "" "State, after the view's first round (one write) and its learning of its groups: a grouped view keeps its groups' aggregate states" \
        "in private memory of the maintenance runtime, measured as the growth of its \"pg_peek view groups\"" \
        "memory contexts (\`pg_log_backend_memory_contexts\`), and its input's rows in an arrangement by the" \
        "group key in DSA, shared with any index on the same collection and key (\`peek.dataflow_operators.bytes\`);" \
        "the view's own index on \`g\` is an arrangement too (\`peek.indexes.bytes\`)." "" \
        "| mode | input rows | view rows | groups bytes per output row | input arrangement bytes per output row | per input row | index bytes per row |" \
        "|---|---|---|---|---|---|---|"
    for mode in on off; do
        while IFS=, read -r _ in out gb irows ib ab; do
            report "| $(mode_name "$mode") | $in | $out | $(awk -v b="$gb" -v n="$out" 'BEGIN { printf "%.0f", b / n }') | $(awk -v b="$ab" -v n="$out" 'BEGIN { printf "%.0f", b / n }') | $(awk -v b="$ab" -v n="$in" 'BEGIN { printf "%.1f", b / n }') | $(awk -v b="$ib" -v n="$irows" 'BEGIN { printf "%.1f", b / n }') |"
        done < <(awk -F, -v m="$mode" 'NR > 1 && $1 == m' "$OUT/$s")
    done
    return 0
}
