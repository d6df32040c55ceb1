#!/bin/sh
# Start script of the MinIO service in compose/starrocks-shared-data.yml.
# Starts the server, waits for it, creates the bucket the StarRocks storage
# volume points at (idempotent), then stays in the foreground with the server.
# POSIX sh on purpose: the MinIO image is minimal.
#
# Environment: MINIO_ROOT_USER, MINIO_ROOT_PASSWORD (read by the server too),
#              MINIO_BUCKET, MC_CONFIG_DIR
set -eu

MINIO_BUCKET="${MINIO_BUCKET:-starrocks}"
READY_FLAG=/tmp/ingestlab-bucket-ready
rm -f "${READY_FLAG}"

minio server /data --address :9000 --console-address :9001 &
pid=$!
stopping=0
trap 'stopping=1; kill -TERM "${pid}" 2>/dev/null || true' TERM INT

tries=0
# `mc ls` proves that the server answers and accepts the credentials.
until mc alias set lab http://127.0.0.1:9000 "${MINIO_ROOT_USER}" "${MINIO_ROOT_PASSWORD}" >/dev/null 2>&1 \
    && mc ls lab >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "${tries}" -ge 120 ] || ! kill -0 "${pid}" 2>/dev/null; then
        echo "[ingestlab:minio] MinIO did not come up" >&2
        kill -TERM "${pid}" 2>/dev/null || true
        exit 1
    fi
    sleep 1
done
mc mb --ignore-existing "lab/${MINIO_BUCKET}"
touch "${READY_FLAG}"
echo "[ingestlab:minio] bucket ${MINIO_BUCKET} is ready" >&2

rc=0
wait "${pid}" || rc=$?
# wait returns early when the trap fires; wait for MinIO to exit for real.
while kill -0 "${pid}" 2>/dev/null; do
    wait "${pid}" || rc=$?
done
[ "${stopping}" = 1 ] && exit 0
exit "${rc}"
