#!/bin/bash
# Entry point of the spark-executor image: one Spark executor pod on Kubernetes, created by data-mirror's driver
# when spark.master=k8s://... (deploy/kubernetes/spark-on-kubernetes). Spark starts the pod with the argument
# "executor" and describes the executor in SPARK_* environment variables; the executor's Python workers run
# data-mirror's task code from the strait package installed in this image. Anything else runs as given.
set -euo pipefail

if [ "${1:-}" != "executor" ]; then
  exec "$@"
fi

spark_home=${SPARK_HOME:-$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
# Spark hands JVM options over as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order.
java_opts=()
while IFS= read -r option; do
  java_opts+=("$option")
done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | cut -d= -f2-)

exec java "${java_opts[@]}" \
  -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
  -cp "${SPARK_CLASSPATH:-}:${spark_home}/jars/*" \
  org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
  --driver-url "${SPARK_DRIVER_URL}" \
  --executor-id "${SPARK_EXECUTOR_ID}" \
  --cores "${SPARK_EXECUTOR_CORES}" \
  --app-id "${SPARK_APPLICATION_ID}" \
  --hostname "${SPARK_EXECUTOR_POD_IP}" \
  --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
  --podName "${SPARK_EXECUTOR_POD_NAME}"
