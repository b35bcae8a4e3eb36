#!/usr/bin/env python3
# The peer of bench/spark/run.sh: what Spark itself takes from spark-submit
# to every task of a barrier stage running, with the executors dtf asks
# for (one per task). Each of N barrier tasks meets the others
# (allGather, as dtf's driver does) and reports the time it got there; the
# driver prints the latest, and the time its executors took to register.
# Usage: spark-submit ... empty_stage.py N
import sys
import time

from pyspark import BarrierTaskContext, SparkConf, SparkContext


def task(_):
    ctx = BarrierTaskContext.get()
    ctx.allGather(str(ctx.partitionId()))
    return [time.time()]


def main():
    n = int(sys.argv[1])
    sc = SparkContext(conf=SparkConf().setAppName("dtf-bench-empty-stage"))
    sc.setLogLevel("WARN")
    start = time.time()
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < n:
        time.sleep(0.1)
    registered = time.time()
    times = sc.parallelize(range(n), n).barrier().mapPartitions(task).collect()
    print("executors_registered %.3f" % registered)
    print("context_started %.3f" % start)
    print("all_running %.3f" % max(times))
    sc.stop()


if __name__ == "__main__":
    main()
