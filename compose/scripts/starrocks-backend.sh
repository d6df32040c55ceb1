#!/usr/bin/env bash
# Start script of the StarRocks BE (compose/starrocks-shared-nothing.yml) and CN
# (compose/starrocks-shared-data.yml). The container shares the FE's network
# namespace, so the FE is at 127.0.0.1:9030 and this node registers itself as
# 127.0.0.1:9050. Before the server starts, the script:
#   1. sets priority_networks, be_http_port and mem_limit in be.conf / cn.conf;
#   2. waits for the FE and registers the node (ALTER SYSTEM ADD BACKEND or
#      ALTER SYSTEM ADD COMPUTE NODE) unless it is registered already;
#   3. shared-data only: creates the MinIO storage volume and makes it the default;
#   4. creates the lab database.
# Every step is idempotent, so restarting the container is safe.
#
# be_http_port is the port the FE puts in its Stream Load redirect. It is set to
# the host port that docker publishes for it (same number inside and outside),
# so a client on the host can follow the redirect.
#
# Environment:
#   SR_NODE          be or cn
#   SR_HTTP_PORT     be_http_port, must equal the published host port
#   SR_MEM_LIMIT     mem_limit of the node, e.g. 3G
#   LAB_DATABASE     database to create (default ingestlab)
#   MYSQL_PWD        root password of the FE, empty unless you set one
#   cn only: SR_S3_ENDPOINT, SR_S3_BUCKET, SR_S3_ACCESS_KEY, SR_S3_SECRET_KEY
ROLE="starrocks-${SR_NODE:-be}"
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"

SR_NODE="${SR_NODE:-be}"
SR_HTTP_PORT="${SR_HTTP_PORT:?SR_HTTP_PORT must be set}"
SR_MEM_LIMIT="${SR_MEM_LIMIT:-3G}"

case "${SR_NODE}" in
    be) NODE_HOME=/opt/starrocks/be CONF=be.conf START=start_be.sh KIND=BACKEND SHOW='SHOW BACKENDS' ;;
    cn) NODE_HOME=/opt/starrocks/cn CONF=cn.conf START=start_cn.sh KIND='COMPUTE NODE' SHOW='SHOW COMPUTE NODES' ;;
    *) die "SR_NODE must be be or cn, not '${SR_NODE}'" ;;
esac

conf_render "${NODE_HOME}/conf/${CONF}" "priority_networks = 127.0.0.1/32
be_http_port = ${SR_HTTP_PORT}
mem_limit = ${SR_MEM_LIMIT}"

wait_for 300 "the FE on 127.0.0.1:${FE_QUERY_PORT}" fe_alive
register_node "${KIND}" "${SHOW}"

if [[ "${SR_NODE}" == cn ]]; then
    : "${SR_S3_ENDPOINT:?}" "${SR_S3_BUCKET:?}" "${SR_S3_ACCESS_KEY:?}" "${SR_S3_SECRET_KEY:?}"
    log "creating storage volume ingestlab_minio on s3://${SR_S3_BUCKET}/ (${SR_S3_ENDPOINT})"
    sql "CREATE STORAGE VOLUME IF NOT EXISTS ingestlab_minio
TYPE = S3
LOCATIONS = (\"s3://$(sql_escape "${SR_S3_BUCKET}")/\")
COMMENT 'MinIO of the ingestlab shared-data compose stack'
PROPERTIES (
    \"enabled\" = \"true\",
    \"aws.s3.region\" = \"us-east-1\",
    \"aws.s3.endpoint\" = \"$(sql_escape "${SR_S3_ENDPOINT}")\",
    \"aws.s3.enable_path_style_access\" = \"true\",
    \"aws.s3.use_aws_sdk_default_behavior\" = \"false\",
    \"aws.s3.use_instance_profile\" = \"false\",
    \"aws.s3.access_key\" = \"$(sql_escape "${SR_S3_ACCESS_KEY}")\",
    \"aws.s3.secret_key\" = \"$(sql_escape "${SR_S3_SECRET_KEY}")\"
)" || die "CREATE STORAGE VOLUME failed (is MinIO up and are the credentials right?)"
    sql "SET ingestlab_minio AS DEFAULT STORAGE VOLUME" || die "SET DEFAULT STORAGE VOLUME failed"
fi

sql "CREATE DATABASE IF NOT EXISTS \`${LAB_DATABASE}\`" || die "CREATE DATABASE ${LAB_DATABASE} failed"

mkdir -p "${NODE_HOME}/storage"
rm -f "${NODE_HOME}/bin/be.pid" "${NODE_HOME}/bin/cn.pid"
log "starting ${SR_NODE} (be_http_port=${SR_HTTP_PORT}, mem_limit=${SR_MEM_LIMIT})"
run_foreground "${NODE_HOME}/bin/${START}" --logconsole
