#!/usr/bin/env bash
# Start script of the Doris BE in compose/doris.yml. The container shares the
# FE's network namespace, so the FE is at 127.0.0.1:9030 and the BE registers
# itself as 127.0.0.1:9050. Before the BE starts, the script:
#   1. sets priority_networks, webserver_port and mem_limit in be.conf;
#   2. waits for the FE and runs ALTER SYSTEM ADD BACKEND unless the BE is
#      registered already;
#   3. creates the lab database.
# Every step is idempotent, so restarting the container is safe.
#
# webserver_port is the BE HTTP port the FE puts in its Stream Load redirect.
# It is set to the host port docker publishes for it (same number inside and
# outside), so a client on the host can follow the redirect.
#
# Environment:
#   DORIS_BE_HTTP_PORT  webserver_port, must equal the published host port
#   DORIS_BE_MEM_LIMIT  mem_limit, e.g. 80% (Doris measures it against the
#                       container's memory limit)
#   LAB_DATABASE        database to create (default ingestlab)
#   MYSQL_PWD           root password of the FE, empty unless you set one
ROLE=doris-be
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"

BE_HOME=/opt/apache-doris/be
DORIS_BE_HTTP_PORT="${DORIS_BE_HTTP_PORT:?DORIS_BE_HTTP_PORT must be set}"
DORIS_BE_MEM_LIMIT="${DORIS_BE_MEM_LIMIT:-80%}"

conf_render "${BE_HOME}/conf/be.conf" "priority_networks = 127.0.0.1/32
webserver_port = ${DORIS_BE_HTTP_PORT}
mem_limit = ${DORIS_BE_MEM_LIMIT}"

wait_for 300 "the FE on 127.0.0.1:${FE_QUERY_PORT}" fe_alive
register_node BACKEND 'SHOW BACKENDS'
sql "CREATE DATABASE IF NOT EXISTS \`${LAB_DATABASE}\`" || die "CREATE DATABASE ${LAB_DATABASE} failed"

mkdir -p "${BE_HOME}/storage"
rm -f "${BE_HOME}/bin/be.pid"
# start_be.sh refuses to start unless vm.max_map_count >= 2000000, swap is off
# and ulimit -n is high. Those are host settings a laptop usually does not
# have; SKIP_CHECK_ULIMIT (Doris >= 2.1.8, meant for Docker) skips the checks.
export SKIP_CHECK_ULIMIT=true
log "starting BE (webserver_port=${DORIS_BE_HTTP_PORT}, mem_limit=${DORIS_BE_MEM_LIMIT})"
run_foreground "${BE_HOME}/bin/start_be.sh" --console
