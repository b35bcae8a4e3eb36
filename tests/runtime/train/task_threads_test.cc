#include "lib/runtime/train/task_threads.h"

#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

HostCpus Cpus(int usable, int online) {
  HostCpus c;
  c.usable = usable;
  c.online = online;
  return c;
}

// A local run: every task on one host shares its cores.
TEST(SharedHostThreads, TasksOnOneHostShareItsCpus) {
  const std::vector<std::string> ps = {"127.0.0.1:5000"};
  const std::vector<std::string> workers = {"127.0.0.1:5001", "127.0.0.1:5002"};
  EXPECT_EQ(SharedHostThreads(ps, workers, workers[1], Cpus(12, 12)), 4);
  EXPECT_EQ(SharedHostThreads({}, workers, workers[0], Cpus(12, 12)), 6);
  // Never less than one.
  EXPECT_EQ(SharedHostThreads(ps, workers, workers[0], Cpus(2, 2)), 1);
  EXPECT_EQ(SharedHostThreads(ps, workers, workers[0], Cpus(1, 1)), 1);
}

// Only the tasks on this task's host count.
TEST(SharedHostThreads, OnlyThisHostsTasksCount) {
  const std::vector<std::string> ps = {"a:1", "b:1"};
  const std::vector<std::string> workers = {"a:2", "a:3", "b:2", "c:2"};
  EXPECT_EQ(SharedHostThreads(ps, workers, "a:2", Cpus(16, 16)), 5);
  EXPECT_EQ(SharedHostThreads(ps, workers, "b:2", Cpus(16, 16)), 8);
  EXPECT_EQ(SharedHostThreads(ps, workers, "c:2", Cpus(16, 16)), 16);
  // A host name that only begins like another is another host.
  EXPECT_EQ(SharedHostThreads({}, {"ab:1", "a:1"}, "a:1", Cpus(8, 8)), 8);
  // IPv6 in brackets.
  EXPECT_EQ(
      SharedHostThreads({}, {"[::1]:1", "[::1]:2"}, "[::1]:2", Cpus(8, 8)), 4);
}

// CPUs given to the task alone (Slurm's binding, taskset): all of them.
TEST(SharedHostThreads, CpusBoundToTheTaskAreItsOwn) {
  const std::vector<std::string> workers = {"n1:1", "n1:2", "n1:3", "n1:4"};
  EXPECT_EQ(SharedHostThreads({}, workers, "n1:1", Cpus(4, 16)), 4);
}

TEST(ThisProcessCpus, SeesTheMachine) {
  const HostCpus cpus = ThisProcessCpus();
  EXPECT_GE(cpus.usable, 1);
  EXPECT_GE(cpus.online, cpus.usable);
}

}  // namespace
}  // namespace dtf::runtime
