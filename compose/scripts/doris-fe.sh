#!/usr/bin/env bash
# Start script of the Doris FE in compose/doris.yml.
#
# Replaces the image's entry point (which derives priority_networks from
# FE_SERVERS) so that the whole configuration is visible here. The FE
# advertises itself as 127.0.0.1: the BE runs in this container's network
# namespace (network_mode: service:fe) and registers as 127.0.0.1:9050, which is
# the address the FE then puts in its Stream Load redirect.
#
# Environment:
#   DORIS_FE_HEAP  JVM heap of the FE, e.g. 2048m
#   MYSQL_PWD      root password for the health check, empty unless you set one
ROLE=doris-fe
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"

FE_HOME=/opt/apache-doris/fe
DORIS_FE_HEAP="${DORIS_FE_HEAP:-2048m}"

# force_olap_table_replication_num = 1: one BE, so tables get one replica
# without every CREATE TABLE spelling out replication_num.
conf_render "${FE_HOME}/conf/fe.conf" "priority_networks = 127.0.0.1/32
enable_fqdn_mode = false
force_olap_table_replication_num = 1"
set_heap "${FE_HOME}/conf/fe.conf" "${DORIS_FE_HEAP}"
mkdir -p "${FE_HOME}/doris-meta"
rm -f "${FE_HOME}/bin/fe.pid"

log "starting FE (heap=${DORIS_FE_HEAP})"
run_foreground "${FE_HOME}/bin/start_fe.sh" --console
