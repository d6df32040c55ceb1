#!/usr/bin/env bash
# Health check of the StarRocks and Doris services in compose/*.yml.
#
#   health.sh fe                       FE answers SHOW FRONTENDS and is alive
#   health.sh backend HTTP_PORT        the BE (or CN) is alive in the FE's view,
#   health.sh compute-node HTTP_PORT   answers /api/health on HTTP_PORT (the
#                                      Stream Load redirect target) and the lab
#                                      database exists
#
# Runs inside the FE's network namespace, so everything is on 127.0.0.1.
# The mysql client takes the root password from MYSQL_PWD (empty by default).
set -uo pipefail

FE_QUERY_PORT="${FE_QUERY_PORT:-9030}"
LAB_DATABASE="${LAB_DATABASE:-ingestlab}"

sql() { mysql -h127.0.0.1 -P"${FE_QUERY_PORT}" -uroot --connect-timeout=3 --batch -e "$1" 2>/dev/null; }

case "${1:-}" in
    fe) show='SHOW FRONTENDS' ;;
    backend) show='SHOW BACKENDS' ;;
    compute-node) show='SHOW COMPUTE NODES' ;;
    *) echo "usage: $0 fe | backend HTTP_PORT | compute-node HTTP_PORT" >&2; exit 2 ;;
esac

out=$(sql "${show}\\G") || exit 1
grep -q 'Alive: true' <<<"${out}" || { echo "no alive node in: ${show}" >&2; exit 1; }
[[ "$1" == fe ]] && exit 0

port="${2:?HTTP port missing}"
curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:${port}/api/health" \
    || { echo "no answer on 127.0.0.1:${port}/api/health" >&2; exit 1; }
dbs=$(sql 'SHOW DATABASES') || exit 1
grep -qx "${LAB_DATABASE}" <<<"${dbs}" || { echo "database ${LAB_DATABASE} missing" >&2; exit 1; }
