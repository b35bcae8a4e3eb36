# lib/launch/slurm, in one process.
dtf_test(launch_slurm_test
  SOURCES launch/slurm/hostlist_test.cc launch/slurm/slurm_env_test.cc
          launch/slurm/slurm_profile_test.cc launch/slurm/batch_script_test.cc
          launch/slurm/slurm_task_test.cc
  LIBS dtf_launch_slurm dtf_launch)
