#!/usr/bin/env python3
"""TensorFlow's ParameterServerStrategy coordinator for bench/scaling: the
coordinator of bench/cluster_train/tf_ps_peer.py, but over a cluster whose
servers run.sh has already started on emulated hosts (their addresses in
DTF_BENCH_CLUSTER, TensorFlow's cluster JSON) instead of local processes it
starts itself. The cluster names this process too, as the "chief" task
(TensorFlow's coordinator), at an address the servers reach: on loopback
the peer leaves it out and TensorFlow makes it localhost, which another
host cannot reach.

    DTF_BENCH_CLUSTER='{"ps": [...], "worker": [...]}' \
        python tf_peer.py ps <tf_ps_peer.py's arguments>

Prints tf_ps_peer.py's JSON object.
"""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "cluster_train"))

import tf_ps_peer  # noqa: E402


def main():
    if len(sys.argv) < 2 or sys.argv[1] != "ps":
        raise SystemExit("usage: tf_peer.py ps ARGS...")
    cluster = json.loads(os.environ["DTF_BENCH_CLUSTER"])
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver

    def chief_resolver(spec, **kwargs):
        kwargs.setdefault("task_type", "chief")
        kwargs.setdefault("task_id", 0)
        return resolver(spec, **kwargs)

    tf.distribute.cluster_resolver.SimpleClusterResolver = chief_resolver
    tf_ps_peer.coordinate = lambda a: tf_ps_peer.train(a, cluster)
    sys.argv = [sys.argv[0]] + sys.argv[2:]
    tf_ps_peer.main()


if __name__ == "__main__":
    main()
