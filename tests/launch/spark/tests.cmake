# lib/launch/spark, in one process: the [spark] table, what each barrier
# task runs, spark-submit's command line and the driver, the plan.
dtf_test(launch_spark_test
  SOURCES launch/spark/spark_profile_test.cc launch/spark/spark_task_test.cc
          launch/spark/spark_plan_test.cc
  LIBS dtf_launch_spark dtf_launch)

# A real Spark standalone cluster on loopback (tests/testing/
# spark_cluster.sh: pyspark from PyPI in build/venv-spark, Java 17 from
# Debian): one master and two workers of 2 cores, each with its own work
# directory, started once for the Spark tests and stopped by the JVMs' pids.
add_test(NAME spark_cluster_start
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/testing/spark_cluster.sh start
                 ${PROJECT_BINARY_DIR}/spark-cluster ${PROJECT_BINARY_DIR})
add_test(NAME spark_cluster_stop
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/testing/spark_cluster.sh stop
                 ${PROJECT_BINARY_DIR}/spark-cluster)
set_tests_properties(spark_cluster_start PROPERTIES FIXTURES_SETUP spark_cluster
                     TIMEOUT 900 LABELS "e2e;spark")
set_tests_properties(spark_cluster_stop PROPERTIES FIXTURES_CLEANUP spark_cluster
                     LABELS "e2e;spark")
# dtf launch --profile spark on that cluster: an unreachable master, the dry
# run, the census job (1 PS + 2 workers, and allreduce) to accuracy 0.85
# with nothing left running, too few cores, a task killed, dtf stop, Ctrl-C.
add_test(NAME e2e_spark_launch
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/spark/spark_launch_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/spark-launch-work
                 ${PROJECT_BINARY_DIR}/spark-cluster)
set_tests_properties(e2e_spark_launch PROPERTIES TIMEOUT 1200
                     LABELS "e2e;spark" FIXTURES_REQUIRED spark_cluster
                     RESOURCE_LOCK spark_cluster)
# dtf predict --profile spark on that cluster: the Titanic records scored by
# 2 barrier tasks, byte for byte as one process; a shard that fails.
add_test(NAME e2e_predict_spark
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/spark/predict_spark_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/predict-spark-work
                 ${PROJECT_BINARY_DIR}/spark-cluster)
set_tests_properties(e2e_predict_spark PROPERTIES TIMEOUT 900
                     LABELS "e2e;spark" FIXTURES_REQUIRED spark_cluster
                     RESOURCE_LOCK spark_cluster)
