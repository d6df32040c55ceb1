#!/bin/bash
# The replicated PostgreSQL stack's two roles (compose/postgres-replicated.yml).
#
#   primary  run once by the image's entry point on a fresh volume (docker-entrypoint-initdb.d):
#            lets the stack's network open replication connections, with the stack's
#            authentication method (trust by default, scram-sha-256 with POSTGRES_PASSWORD set).
#   standby  the container's entry point: on an empty volume, pg_basebackup -R of the primary
#            (application_name = the service's name), then the server in the foreground.
set -Eeuo pipefail
ROLE="${ROLE:-${1:-primary}}"
log() { printf '%s [ingestlab:%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${ROLE}" "$*" >&2; }

case "${ROLE}" in
primary)
    log "allowing replication from the stack's network (${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256})"
    printf 'host replication all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"${PGDATA}/pg_hba.conf"
    ;;
standby)
    : "${STANDBY_NAME:?STANDBY_NAME must name the standby (its application_name)}"
    if [[ ! -s "${PGDATA}/PG_VERSION" ]]; then
        log "base backup of ${PRIMARY_HOST:-primary} into ${PGDATA} as ${STANDBY_NAME}"
        mkdir -p "${PGDATA}" && chown postgres:postgres "${PGDATA}" && chmod 0700 "${PGDATA}"
        # the password, if any, reaches pg_basebackup through PGPASSWORD (environment), never its arguments
        gosu postgres pg_basebackup -h "${PRIMARY_HOST:-primary}" -U postgres -D "${PGDATA}" -R -X stream -c fast \
            -d "application_name=${STANDBY_NAME}"
    fi
    log "starting the standby"
    exec gosu postgres postgres -D "${PGDATA}"
    ;;
*)
    log "ERROR: unknown role ${ROLE}"; exit 1 ;;
esac
