# lib/launch/slurm, in one process.
dtf_test(launch_slurm_test
  SOURCES launch/slurm/hostlist_test.cc launch/slurm/slurm_env_test.cc
          launch/slurm/slurm_profile_test.cc launch/slurm/batch_script_test.cc
          launch/slurm/slurm_task_test.cc launch/slurm/slurm_query_test.cc
          launch/slurm/slurm_plan_test.cc launch/slurm/step_record_test.cc
  LIBS dtf_launch_slurm dtf_launch)

# lib/launch/slurm against a real single-node Slurm that the test starts
# (tests/testing/slurm_cluster.sh; as root it installs slurm-wlm and munge
# when missing); skipped (exit 77) where it cannot.
add_executable(slurm_env_probe launch/slurm/slurm_env_probe.cc)
dtf_target_defaults(slurm_env_probe)
target_link_libraries(slurm_env_probe PRIVATE dtf_launch_slurm)
add_test(NAME launch_slurm_srun
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_env_srun_test.sh
                 $<TARGET_FILE:slurm_env_probe> ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/slurm-srun-work)
set_tests_properties(launch_slurm_srun PROPERTIES TIMEOUT 900 LABELS e2e
                     SKIP_RETURN_CODE 77)
# A dtf run under that Slurm: the census job (1 PS, 2 workers) submitted
# with RenderBatchScript's script, every task `dtf task slurm`, to its end;
# then a run cancelled with scancel.
add_test(NAME e2e_slurm_run
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_run_test.sh
                 $<TARGET_FILE:dtf> $<TARGET_FILE:slurm_env_probe>
                 ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/slurm-run-work)
set_tests_properties(e2e_slurm_run PROPERTIES TIMEOUT 1200 LABELS e2e
                     SKIP_RETURN_CODE 77)
# dtf launch --profile slurm on that Slurm: a census run to accuracy 0.85,
# dtf stop, a task that cannot start, a run inside salloc.
add_test(NAME e2e_slurm_launch
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_launch_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/slurm-launch-work)
set_tests_properties(e2e_slurm_launch PROPERTIES TIMEOUT 1200 LABELS e2e
                     SKIP_RETURN_CODE 77)
# dtf predict --profile slurm on that Slurm: the Titanic records scored by 2
# workers of one job, byte for byte as one process; a failing shard; Ctrl-C
# while the job is held in the queue.
add_test(NAME e2e_predict_slurm
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/predict_slurm_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/predict-slurm-work)
set_tests_properties(e2e_predict_slurm PROPERTIES TIMEOUT 900 LABELS e2e
                     SKIP_RETURN_CODE 77)
# Restarts and resumes on that Slurm: a worker's and a parameter server's
# dtf serve killed mid-run, each started again in a job step of its own
# (max_restarts = 1); a run cancelled with scancel and a run failed by a
# killed worker, each finished with dtf launch --resume.
add_test(NAME e2e_slurm_restart
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_restart_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/slurm-restart-work)
set_tests_properties(e2e_slurm_restart PROPERTIES TIMEOUT 900 LABELS e2e
                     SKIP_RETURN_CODE 77)
# Workers added mid-run on that Slurm: max_workers = 3, 2 started, the
# reserved slot waiting in its place in the job step until dtf scale starts
# it; a run never scaled ends with its slot reserved and its job completed.
add_test(NAME e2e_slurm_scale
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_scale_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR}/slurm-scale-work)
set_tests_properties(e2e_slurm_scale PROPERTIES TIMEOUT 900 LABELS e2e
                     SKIP_RETURN_CODE 77)
# dtf launch --profile slurm with records and output_dir in a bucket of a
# SeaweedFS server the test starts: the tasks reach it with the run's
# s3-credentials file in the shared run directory alone.
add_test(NAME e2e_slurm_s3
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/launch/slurm/slurm_s3_test.sh
                 $<TARGET_FILE:dtf> ${PROJECT_SOURCE_DIR} ${DTF_SHARED_DIR}
                 ${PROJECT_BINARY_DIR} ${PROJECT_BINARY_DIR}/slurm-s3-work)
set_tests_properties(e2e_slurm_s3 PROPERTIES TIMEOUT 600 LABELS e2e
                     SKIP_RETURN_CODE 77)
