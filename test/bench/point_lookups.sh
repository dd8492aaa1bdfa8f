#!/usr/bin/env bash
# Benchmark driver (not a test): point lookups through peek.index_peek against
# a prepared btree lookup on the same rows, in both runtime modes, measured in
# the same run.  Reports throughput ratios, p50/p99 latency, and arrangement
# bytes per row against heap + btree bytes per row.
#
#   test/bench/point_lookups.sh [--rows N] [--seconds S] [--repeat R] [--no-build] [--out DIR]
#
# Each pgbench run is repeated R times (default 3), interleaving the queries,
# and the report gives medians with min-max, because the machine is noisy.
#
# Starts its own throwaway clusters (as the postgres user when run as root).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/lib.sh
source "$ROOT/scripts/lib.sh"

ROWS=1000000
SECONDS_PER_RUN=10
REPEAT=3
BUILD=1
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) ROWS=$2; shift 2 ;;
		--seconds) SECONDS_PER_RUN=$2; shift 2 ;;
		--repeat) REPEAT=$2; shift 2 ;;
		--no-build) BUILD=0; shift ;;
		--out) OUT=$2; shift 2 ;;
		*) echo "usage: $0 [--rows N] [--seconds S] [--repeat R] [--no-build] [--out DIR]" >&2; exit 2 ;;
	esac
done

WORK=$(mktemp -d /tmp/pg_peek_bench.XXXXXX)
chown postgres:postgres "$WORK" 2>/dev/null || true
trap 'stop_all_clusters; rm -rf "$WORK"' EXIT
[ -n "$OUT" ] || OUT="$ROOT/bench/results/$(date -u +%Y-%m-%d)"
mkdir -p "$OUT"

ensure_packages
if [ "$BUILD" = 1 ]; then
	build_and_install "$WORK/build.log"
fi

# p50 and p99 (ms) of a pgbench per-transaction log (latency is field 3, µs).
# pgbench reads its clock lazily, so transactions far below a microsecond
# apart can log 0: the floor's (SELECT 1) percentiles are not meaningful.
percentiles() {
	cat "$@" | awk '{print $3}' | sort -n | awk '
		{ a[NR] = $1 }
		END { if (NR == 0) { print "NA NA"; exit }
		      i50 = int(NR * 0.50); if (i50 < 1) i50 = 1;
		      i99 = int(NR * 0.99); if (i99 < 1) i99 = 1;
		      printf "%.3f %.3f\n", a[i50] / 1000, a[i99] / 1000 }'
}

# run_pgbench NAME CLIENTS SCRIPT: prints "tps p50 p99"
run_pgbench() {
	local name=$1 clients=$2 script=$3 dir="$WORK/log-$1-$2"
	mkdir -p "$dir"; chown postgres:postgres "$dir" 2>/dev/null || true
	local tps
	tps=$(cd "$dir" && as_pg "$PG_BIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -M prepared \
		-c "$clients" -j "$clients" -T "$SECONDS_PER_RUN" -f "$script" --log --log-prefix="$dir/tx" postgres \
		| awk '/^tps/ {print $3}')
	echo "$tps $(percentiles "$dir"/tx*)"
}

CSV="$OUT/point_lookups.csv"
echo "mode,clients,query,run,tps,p50_ms,p99_ms" > "$CSV"
declare -A SIZES

for mode in on off; do
	info "interactive = $mode: loading $ROWS rows"
	DATA="$WORK/data-$mode"; SOCK="$WORK/sock-$mode"; mkdir -p "$SOCK"
	chown postgres:postgres "$SOCK" 2>/dev/null || true
	PORT=$(pick_free_port 55432)
	cluster_init "$DATA" "$SOCK" "$PORT" "$WORK/initdb-$mode.log" \
		"shared_preload_libraries = 'pg_peek'" "pg_peek.interactive = $mode" \
		"shared_buffers = '1GB'" \
		"synchronous_commit = off" "pg_peek.max_memory = '4GB'"
	cluster_start "$DATA" "$WORK/server-$mode.log"
	psql_q() { as_pg "$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
	psql_q <<-SQL
		CREATE EXTENSION pg_peek;
		CREATE TYPE pt AS (k int, v text);
		SELECT peek.create_collection('points', 'pt');
		SELECT count(peek.write('points', rows)) FROM (
		  SELECT array_agg((g, 'value ' || g)::pt) AS rows
		    FROM generate_series(1, $ROWS) g GROUP BY g / 100000) chunks;
		SELECT peek.create_index('points_by_k', 'points', ARRAY['k']);
		CREATE TABLE bt (k int PRIMARY KEY, v text);
		INSERT INTO bt SELECT g, 'value ' || g FROM generate_series(1, $ROWS) g;
		VACUUM ANALYZE bt;
	SQL
	for _ in $(seq 1 600); do
		[ "$(psql_q -c "SELECT state FROM peek.indexes WHERE name = 'points_by_k'")" = ready ] && break
		sleep 0.5
	done
	SIZES[$mode]=$(psql_q -c "SELECT round(bytes::numeric / $ROWS, 1) || ' ' ||
		round((pg_relation_size('bt') + pg_relation_size('bt_pkey'))::numeric / $ROWS, 1)
		FROM peek.indexes WHERE name = 'points_by_k'")

	cat > "$WORK/floor.sql" <<-'EOF'
		SELECT 1;
	EOF
	cat > "$WORK/btree.sql" <<-EOF
		\set k random(1, $ROWS)
		SELECT k, v FROM bt WHERE k = :k;
	EOF
	cat > "$WORK/peek.sql" <<-EOF
		\set k random(1, $ROWS)
		SELECT k, v FROM peek.index_peek(NULL::pt, 'points_by_k', ROW(:k::int));
	EOF
	chmod 644 "$WORK"/*.sql
	for clients in 1 2; do
		for run in $(seq 1 "$REPEAT"); do
			for q in floor btree peek; do
				read -r tps p50 p99 < <(run_pgbench "$mode-$q-$run" "$clients" "$WORK/$q.sql")
				echo "$mode,$clients,$q,$run,$tps,$p50,$p99" >> "$CSV"
				printf '  interactive=%s clients=%s run=%s %-6s tps=%10.0f p50=%sms p99=%sms\n' \
					"$mode" "$clients" "$run" "$q" "$tps" "$p50" "$p99"
			done
		done
	done
	cluster_stop "$DATA"
done

REPORT="$OUT/point_lookups.md"
# stats MODE CLIENTS QUERY FIELD: "median min max" over the runs
stats() {
	awk -F, -v m="$1" -v c="$2" -v q="$3" -v f="$4" \
		'NR > 1 && $1 == m && $2 == c && $3 == q { print $f }' "$CSV" | sort -g | awk '
		{ a[NR] = $1 }
		END { printf "%s %s %s\n", a[int((NR + 1) / 2)], a[1], a[NR] }'
}
# per-run peek/btree ratios: "median min max"
ratio_stats() {
	awk -F, -v m="$1" -v c="$2" '
		NR > 1 && $1 == m && $2 == c && $3 == "peek"  { p[$4] = $5 }
		NR > 1 && $1 == m && $2 == c && $3 == "btree" { b[$4] = $5 }
		END { for (r in p) printf "%.2f\n", p[r] / b[r] }' "$CSV" | sort -g | awk '
		{ a[NR] = $1 }
		END { printf "%s %s %s\n", a[int((NR + 1) / 2)], a[1], a[NR] }'
}
{
	echo "# Point lookups: peek.index_peek vs a btree lookup ($ROWS rows, ${SECONDS_PER_RUN}s per run, $REPEAT runs)"
	echo
	echo "Medians over the runs, min-max in brackets."
	echo
	echo "| mode | clients | peek/btree | index_peek tps | btree tps | SELECT 1 tps | peek p50 / p99 ms | btree p50 / p99 ms |"
	echo "|---|---|---|---|---|---|---|---|"
	for mode in on off; do
		for clients in 1 2; do
			read -r rm rlo rhi < <(ratio_stats "$mode" "$clients")
			read -r pm plo phi < <(stats "$mode" "$clients" peek 5)
			read -r bm blo bhi < <(stats "$mode" "$clients" btree 5)
			read -r fm _ _ < <(stats "$mode" "$clients" floor 5)
			read -r p50 _ _ < <(stats "$mode" "$clients" peek 6)
			read -r p99 _ _ < <(stats "$mode" "$clients" peek 7)
			read -r b50 _ _ < <(stats "$mode" "$clients" btree 6)
			read -r b99 _ _ < <(stats "$mode" "$clients" btree 7)
			printf '| %s | %s | %sx [%s-%s] | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.0f | %s / %s | %s / %s |\n' \
				"$([ "$mode" = on ] && echo split || echo solo)" "$clients" "$rm" "$rlo" "$rhi" \
				"$pm" "$plo" "$phi" "$bm" "$blo" "$bhi" "$fm" "$p50" "$p99" "$b50" "$b99"
		done
	done
	echo
	read -r arr heap <<< "${SIZES[on]}"
	echo "Memory: arrangement $arr bytes/row (DSA) vs heap + btree $heap bytes/row."
	echo
	echo "Targets: split-mode throughput >= 0.7x the btree; memory per row <= heap + btree."
	echo "pgbench reads its clock lazily: sub-microsecond SELECT 1 latencies log as 0, so the floor's latencies are not shown."
} > "$REPORT"
cat "$REPORT"
info "wrote $REPORT and $CSV"
