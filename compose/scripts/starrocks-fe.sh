#!/usr/bin/env bash
# Start script of the StarRocks FE in compose/starrocks-shared-nothing.yml and
# compose/starrocks-shared-data.yml.
#
# The FE advertises itself as 127.0.0.1 (priority_networks = 127.0.0.1/32): the
# BE or CN of the stack runs in this container's network namespace
# (network_mode: service:fe) and registers as 127.0.0.1:9050, so the Stream Load
# redirect the FE sends (HTTP 307 to http://127.0.0.1:<be_http_port>/...) is
# reachable from the host through the port this container publishes.
#
# Environment:
#   SR_RUN_MODE   shared_nothing (default) or shared_data
#   SR_FE_HEAP    JVM heap of the FE, e.g. 2048m
#   MYSQL_PWD     root password for the health check, empty unless you set one
ROLE=starrocks-fe
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"

FE_HOME=/opt/starrocks/fe
SR_RUN_MODE="${SR_RUN_MODE:-shared_nothing}"
SR_FE_HEAP="${SR_FE_HEAP:-2048m}"

block="priority_networks = 127.0.0.1/32
# one backend: new tables get one replica
default_replication_num = 1
run_mode = ${SR_RUN_MODE}"
case "${SR_RUN_MODE}" in
    shared_nothing) ;;
    shared_data)
        # The storage volume (MinIO) is created by SQL from the CN start script,
        # not from fe.conf, so the FE starts without object-store settings.
        block+="
cloud_native_storage_type = S3
enable_load_volume_from_conf = false"
        ;;
    *) die "SR_RUN_MODE must be shared_nothing or shared_data, not '${SR_RUN_MODE}'" ;;
esac

conf_render "${FE_HOME}/conf/fe.conf" "${block}"
set_heap "${FE_HOME}/conf/fe.conf" "${SR_FE_HEAP}"
mkdir -p "${FE_HOME}/meta"
# A pid file left by the previous run of a restarted container would make
# start_fe.sh refuse to start when the pid is reused.
rm -f "${FE_HOME}/bin/fe.pid"

log "starting FE (run_mode=${SR_RUN_MODE}, heap=${SR_FE_HEAP})"
run_foreground "${FE_HOME}/bin/start_fe.sh" --logconsole
