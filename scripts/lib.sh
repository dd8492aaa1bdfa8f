# shellcheck shell=bash
# scripts/lib.sh: helpers shared by scripts/test, scripts/demo and scripts/bench.
# Source it (after `set -euo pipefail` and after setting ROOT to the repo
# root); it does nothing on its own.
#
# Provides:
#   ensure_packages [PKG...]   install the Debian packages we need (and PKGs) if missing
#   stop_debian_main_cluster   stop the package's own 15/main cluster on 5432
#   build_and_install LOG [MAKEVAR=VALUE...]  make clean all install (log to LOG)
#   AS_PG / as_pg CMD...       run CMD as the postgres user (when root)
#   pick_free_port START       first port >= START that looks unused
#   cluster_init DATA SOCK PORT INITDB_LOG [CONF_LINE...]
#   cluster_start DATA LOG     pg_ctl start -w
#   cluster_stop DATA [MODE]   pg_ctl stop (fast, falling back to immediate)

# shellcheck disable=SC2034  # used by the scripts that source this file
# PG_PEEK_PG_ROOT: a relocated copy of the PostgreSQL tree (ROOT/usr/lib/
# postgresql/15 and ROOT/usr/share/postgresql/15, see scripts/private-pg), so
# that several work trees can install and test at once; empty = the system's.
PG_ROOT=${PG_PEEK_PG_ROOT:-}
PG_BIN=$PG_ROOT/usr/lib/postgresql/15/bin
PG_CONFIG=$PG_BIN/pg_config
PGXS_DIR=$PG_ROOT/usr/lib/postgresql/15/lib/pgxs
PG_REGRESS=$PGXS_DIR/src/test/regress/pg_regress
PG_ISOLATION_REGRESS=$PGXS_DIR/src/test/isolation/pg_isolation_regress
PG_TAP_PERL=$PGXS_DIR/src/test/perl

REQUIRED_PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-client-15
                   libkrb5-dev libipc-run-perl make gcc)
# Only scripts/bench needs these (its charts); it passes them to ensure_packages.
BENCH_PACKAGES=(gnuplot-nox)

# Data directories started by cluster_start and not yet stopped; scripts stop
# them from their EXIT trap (see stop_all_clusters).
RUNNING_CLUSTERS=()

info() { printf '==> %s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*"; }

# Print the required packages (and the ones named) that are not installed,
# one per line.
missing_packages() {
    local pkg status
    for pkg in "${REQUIRED_PACKAGES[@]}" "$@"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
        [[ $status == installed ]] || printf '%s\n' "$pkg"
    done
}

# Install whatever is missing of the required packages and the ones named
# (apt-get update first). Needs root to install.
ensure_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    ((${#missing[@]} == 0)) && return 0
    if ((EUID != 0)); then
        printf 'ERROR: missing Debian packages: %s (run as root to install them)\n' \
            "${missing[*]}" >&2
        return 1
    fi
    info "installing missing packages: ${missing[*]}"
    apt-get -q update || return 1
    DEBIAN_FRONTEND=noninteractive apt-get -q install -y "${missing[@]}" || return 1
}

# Installing postgresql-15 creates (and may start) a `main` cluster on 5432.
# We never use it; stop it so it cannot get in the way.
stop_debian_main_cluster() {
    command -v pg_lsclusters >/dev/null 2>&1 || return 0
    if pg_lsclusters -h 2>/dev/null |
        awk '$1 == "15" && $2 == "main" && $3 == "5432" && $4 ~ /^online/ { f = 1 }
             END { exit !f }'; then
        info "stopping the Debian package's 15/main cluster on port 5432"
        pg_ctlcluster 15 main stop || true
    fi
    return 0
}

# Build and install the extension from $ROOT. All output goes to $1; on
# failure the log is printed and 1 returned.  Further arguments go to make
# (the tests pass COPT=-Werror: the shipped Makefile warns, never fails).
build_and_install() {
    local log=$1
    shift
    info "building and installing pg_peek (log: $log)"
    if ! make -C "$ROOT" PG_CONFIG="$PG_CONFIG" "$@" clean all install >"$log" 2>&1; then
        printf '\nERROR: build failed; build log follows\n'
        cat "$log"
        return 1
    fi
}

# Prefix that runs a command as the postgres user (the server and initdb
# refuse root); empty when not root. Use "${AS_PG[@]}" rather than as_pg for
# commands that are redirected or put in the background: a shell function
# would run them in a subshell, or with the redirection still active while
# an EXIT trap runs.
if ((EUID == 0)); then
    AS_PG=(runuser -u postgres --)
else
    AS_PG=()
fi
as_pg() {
    "${AS_PG[@]}" "$@"
}

# True if something seems to use port $1 (a TCP listener on localhost or a
# socket file in the usual socket directories).
port_in_use() {
    local p=$1
    [[ -e /tmp/.s.PGSQL.$p || -e /var/run/postgresql/.s.PGSQL.$p ]] && return 0
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && return 0
    return 1
}

# Print the first port >= $1 that is not in use.
pick_free_port() {
    local p=$1
    while port_in_use "$p"; do
        p=$((p + 1))
    done
    printf '%s\n' "$p"
}

# initdb a throwaway cluster in $1 (which must not exist; its parent must be
# writable by postgres), listening only on a Unix socket in $2 at port $3.
# initdb's output goes to $4; extra postgresql.conf lines follow.
cluster_init() {
    local datadir=$1 sockdir=$2 port=$3 initdb_log=$4
    shift 4
    as_pg mkdir -p "$sockdir" || return 1
    if ! "${AS_PG[@]}" "$PG_BIN/initdb" -D "$datadir" --no-sync --auth=trust \
        --encoding=UTF8 --locale=C >"$initdb_log" 2>&1; then
        printf 'ERROR: initdb failed; its output follows\n'
        cat "$initdb_log"
        return 1
    fi
    {
        printf '\n# added by scripts/lib.sh\n'
        printf '%s\n' \
            "listen_addresses = ''" \
            "unix_socket_directories = '$sockdir'" \
            "port = $port" \
            "max_connections = 50" \
            "fsync = off" \
            "log_line_prefix = '%m [%p] %b '" \
            "log_min_messages = info"
        if (($# > 0)); then printf '%s\n' "$@"; fi
    } >>"$datadir/postgresql.conf"
}

# Start the cluster in $1, server log in $2. On failure print the log tail.
cluster_start() {
    local datadir=$1 log=$2
    if ! "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$datadir" -l "$log" -w -t 60 start >/dev/null; then
        printf 'ERROR: could not start the cluster in %s; server log tail:\n' "$datadir"
        tail -n 80 "$log" 2>/dev/null || true
        return 1
    fi
    RUNNING_CLUSTERS+=("$datadir")
}

# Stop the cluster in $1 (mode $2, default fast). If that fails, stop it in
# immediate mode and return 1.
cluster_stop() {
    local datadir=$1 mode=${2:-fast} d rest=() rc=0
    if ! "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$datadir" -m "$mode" -w -t 60 stop >/dev/null; then
        warn "pg_ctl -m $mode stop failed for $datadir; stopping it in immediate mode"
        "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$datadir" -m immediate -w -t 30 stop >/dev/null || true
        rc=1
    fi
    for d in "${RUNNING_CLUSTERS[@]}"; do
        [[ $d == "$datadir" ]] || rest+=("$d")
    done
    RUNNING_CLUSTERS=("${rest[@]}")
    return "$rc"
}

# Stop every cluster still running (for EXIT traps).
stop_all_clusters() {
    local d
    for d in "${RUNNING_CLUSTERS[@]}"; do
        "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$d" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    done
    RUNNING_CLUSTERS=()
}
