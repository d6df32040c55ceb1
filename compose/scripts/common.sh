# Helpers shared by the ingestlab StarRocks and Doris start scripts.
# Sourced, not run. Every script that sources this file sets ROLE first.
set -Eeuo pipefail

FE_QUERY_PORT="${FE_QUERY_PORT:-9030}"
LAB_DATABASE="${LAB_DATABASE:-ingestlab}"

log() { printf '%s [ingestlab:%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${ROLE:-?}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# conf_render FILE BLOCK
# Rewrites FILE as the copy shipped in the image plus BLOCK. StarRocks and Doris
# both take the last assignment of a key, so BLOCK overrides the shipped
# defaults. The shipped copy is kept as FILE.ingestlab-orig, so running the
# script again on a restarted container does not append twice.
conf_render() {
    local conf=$1 block=$2
    [[ -f "${conf}.ingestlab-orig" ]] || cp "${conf}" "${conf}.ingestlab-orig"
    {
        cat "${conf}.ingestlab-orig"
        printf '\n# ---- written by compose/scripts (ingestlab) at container start ----\n%s\n' "${block}"
    } >"${conf}"
}

# set_heap FILE SIZE
# The JVM heap sits inside long JAVA_OPTS* lines that carry other flags
# (GC logging, --add-opens for JDK 17). Only the -Xmx/-Xms tokens are rewritten.
set_heap() {
    sed -i -E "s/-Xmx[0-9]+[kKmMgG]?/-Xmx$2/g; s/-Xms[0-9]+[kKmMgG]?/-Xms$2/g" "$1"
}

# sql STATEMENT: run one statement against the FE of this stack as root.
# The FE and the backend share one network namespace, so the FE is 127.0.0.1.
# The mysql client reads the password from MYSQL_PWD (empty by default).
sql() {
    mysql -h127.0.0.1 -P"${FE_QUERY_PORT}" -uroot --connect-timeout=3 --batch -e "$1"
}

# sql_escape VALUE: make VALUE safe inside a double-quoted SQL string literal.
sql_escape() {
    local v=${1//\\/\\\\}
    printf '%s' "${v//\"/\\\"}"
}

# The output is captured before grep runs: with pipefail, `mysql | grep -q`
# can report failure when grep exits early and mysql gets SIGPIPE.
fe_alive() {
    local out
    out=$(sql 'SHOW FRONTENDS\G' 2>/dev/null) || return 1
    grep -q 'Alive: true' <<<"${out}"
}

# node_listed SHOW_STATEMENT: true when a node registered as 127.0.0.1 is listed.
# StarRocks prints the address as "IP:", Doris as "Host:".
node_listed() {
    local out
    out=$(sql "$1\\G" 2>/dev/null) || return 1
    grep -Eq '^ *(IP|Host): 127\.0\.0\.1$' <<<"${out}"
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds.
wait_for() {
    local timeout=$1 what=$2
    shift 2
    local deadline=$((SECONDS + timeout))
    until "$@"; do
        ((SECONDS < deadline)) || die "timed out after ${timeout}s waiting for ${what}"
        sleep 2
    done
}

# register_node KIND SHOW_STATEMENT
# Registers the backend of this container with the FE as 127.0.0.1:9050 unless
# it is listed already. KIND is BACKEND or COMPUTE NODE.
register_node() {
    local kind=$1 show=$2
    if node_listed "${show}"; then
        log "${kind} 127.0.0.1:9050 is already registered"
        return 0
    fi
    log "registering ${kind} 127.0.0.1:9050"
    sql "ALTER SYSTEM ADD ${kind} '127.0.0.1:9050'" || node_listed "${show}" \
        || die "ALTER SYSTEM ADD ${kind} failed"
}

# run_foreground COMMAND...
# Starts COMMAND in its own process group and forwards SIGTERM/SIGINT to the
# whole group, so `docker compose stop` shuts the server down cleanly: the
# StarRocks/Doris start scripts keep the JVM or binary as a child process, which
# would otherwise only get the SIGKILL at the end of the grace period. Returns
# when every process of the group is gone; exits 0 after a requested stop,
# otherwise with the server's exit status.
run_foreground() {
    set -m # a background job gets its own process group (pgid = its pid)
    "$@" &
    local pid=$!
    set +m # no job-status chatter from here on
    _ingestlab_stopping=0
    # shellcheck disable=SC2064  # expand pid now
    trap "_ingestlab_stopping=1; log 'stopping'; kill -TERM -- -${pid} 2>/dev/null || true" TERM INT
    local rc=0
    wait "${pid}" || rc=$?
    # wait returns early when a trapped signal arrives, and the group leader
    # (the start script) can exit before the server it started.
    while kill -0 -- "-${pid}" 2>/dev/null; do
        sleep 1
    done
    if ((_ingestlab_stopping)); then
        log "stopped"
        exit 0
    fi
    log "server exited (status ${rc})"
    exit "${rc}"
}
