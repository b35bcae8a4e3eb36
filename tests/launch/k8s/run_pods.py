"""Runs a rendered dtf run's pods as local processes.

usage: run_pods.py RENDER_DIR DTF WORK_DIR TIMEOUT_S

Takes the manifests `dtf launch --render` wrote (an Indexed Job and its
Service, or a TFJob) and starts every pod as the cluster would, on this
machine: each pod gets a root WORK_DIR/pod-<n> where its volumes are
materialised (the Secret's file with mode 0400, the ConfigMap's job file
at its subPath, emptyDirs as directories, hostPaths as symbolic links),
every absolute path in its command line is taken under that root, the
pods' DNS names become 127.0.0.1 with a port each, and /usr/bin/dtf is
DTF. Indexed Job pods get JOB_COMPLETION_INDEX; TFJob pods the TF_CONFIG
Kubeflow's operator sets, and its replica labels (which the downward API
hands to a container's env). Init containers run first, then every pod's
container at once. When every worker has exited, the parameter servers
that still run are stopped (the Job's successPolicy, the TFJob's
cleanPodPolicy: Running). Prints the chief's output; exits with the first
non-zero exit status of a worker, 0 when all succeeded.
"""
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import yaml


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load(render_dir):
    objects = {}
    for name in sorted(os.listdir(render_dir)):
        if name.endswith(".yaml"):
            with open(os.path.join(render_dir, name)) as f:
                for doc in yaml.safe_load_all(f):
                    objects.setdefault(doc["kind"], []).append(doc)
    return objects


class Pod:
    def __init__(self, name, spec, env, root):
        self.name, self.spec, self.env, self.root = name, spec, env, root
        # The labels the pod's controller set (a TFJob's replica index).
        self.labels = {}
        self.proc = None
        self.log = os.path.join(root, "log.txt")


def project(target, files, mode):
    """A Secret or ConfigMap volume as the kubelet writes it (its atomic
    writer): the files in a timestamped directory, `..data` a link to it,
    and each key a link to `..data/<key>`."""
    os.makedirs(target, exist_ok=True)
    stamp = "..2026_01_01_00_00_00.000000001"
    os.makedirs(os.path.join(target, stamp))
    for key, value in files.items():
        path = os.path.join(target, stamp, key)
        with open(path, "wb") as f:
            f.write(value)
        os.chmod(path, mode)
    os.symlink(stamp, os.path.join(target, "..data"))
    for key in files:
        os.symlink(os.path.join("..data", key), os.path.join(target, key))


def pod_mounts(spec):
    """Every volume mount of a pod's containers (init containers first),
    one per mount path."""
    mounts = {}
    for c in spec.get("initContainers", []) + spec["containers"]:
        for m in c.get("volumeMounts", []):
            mounts.setdefault(m["mountPath"], m)
    return list(mounts.values())


def config_files(config):
    """A ConfigMap's keys and their bytes: `data` (text) and `binaryData`
    (base64)."""
    files = {k: x.encode() for k, x in config.get("data", {}).items()}
    files.update({k: base64.b64decode(x)
                  for k, x in config.get("binaryData", {}).items()})
    return files


def materialise(pod, objects):
    secrets = {o["metadata"]["name"]: o for o in objects.get("Secret", [])}
    configs = {o["metadata"]["name"]: o for o in objects.get("ConfigMap", [])}
    volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
    # Parents before what is mounted inside them.
    for m in sorted(pod_mounts(pod.spec), key=lambda m: m["mountPath"]):
        v = volumes[m["name"]]
        target = pod.root + m["mountPath"]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if "secret" in v:
            data = secrets[v["secret"]["secretName"]]["data"]
            project(target, {k: base64.b64decode(x) for k, x in data.items()},
                    v["secret"]["defaultMode"])
        elif "configMap" in v:
            files = config_files(configs[v["configMap"]["name"]])
            if "subPath" in m:
                with open(target, "wb") as f:
                    f.write(files[m["subPath"]])
            else:
                project(target, files, v["configMap"].get("defaultMode", 0o644))
        elif "emptyDir" in v:
            os.makedirs(target, exist_ok=True)
        elif "hostPath" in v:
            os.symlink(v["hostPath"]["path"], target)
        else:
            sys.exit(f"{pod.name}: volume {m['name']}: not materialised here")


def to_loopback(text, addresses, port):
    """<pod name>.<anything>:<port> -> that pod's 127.0.0.1:<port>."""
    return re.sub(r"([a-z0-9-]+)\.[a-z0-9.-]+:" + str(port),
                  lambda m: addresses.get(m.group(1), m.group(0)), text)


def map_argv(pod, container, argv, dtf, addresses, port):
    """argv as it runs on this machine: the pods' DNS names on loopback,
    every path under one of the container's mounts taken under the pod's
    root, and /usr/bin/dtf as DTF."""
    mount_paths = sorted(
        (m["mountPath"] for m in container.get("volumeMounts", [])),
        key=len, reverse=True)

    def local(arg):
        if port is not None:
            arg = to_loopback(arg, addresses, port)
        for mp in mount_paths:
            if arg == mp or arg.startswith(mp + "/"):
                return pod.root + arg
        return arg

    return [dtf if a == "/usr/bin/dtf" else local(a) for a in argv]


def local_argv(pod, container, dtf, addresses, port):
    command = [dtf if c == "/usr/bin/dtf" else c for c in container["command"]]
    return command + map_argv(pod, container, container.get("args", []), dtf,
                              addresses, port)


def container_env(pod, container, addresses, port):
    """This process's environment with the container's and the pod's."""
    env = dict(os.environ)
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
            continue
        # The downward API: metadata.labels['<key>'] of the pod.
        path = e["valueFrom"]["fieldRef"]["fieldPath"]
        m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
        if not m:
            sys.exit(f"{pod.name}: env {e['name']}: {path} not given here")
        env[e["name"]] = pod.labels.get(m.group(1), "")
    for k, v in pod.env.items():
        env[k] = to_loopback(v, addresses, port) if port is not None else v
    return env


def start(pod, container, dtf, addresses, port):
    env = container_env(pod, container, addresses, port)
    argv = local_argv(pod, container, dtf, addresses, port)
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                            stdout=open(pod.log, "ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def job_pods(objects, work):
    job = objects["Job"][0]
    name = job["metadata"]["name"]
    ns = job["metadata"]["namespace"]
    spec = job["spec"]["template"]["spec"]
    port = spec["containers"][0]["ports"][0]["containerPort"]
    first_worker = int(job["spec"]["successPolicy"]["rules"][0]
                       ["succeededIndexes"].split("-")[0])
    pods, workers = [], []
    for i in range(job["spec"]["completions"]):
        pods.append(Pod(f"{name}-{i}", spec, {"JOB_COMPLETION_INDEX": str(i)},
                        os.path.join(work, f"pod-{i}")))
        if i >= first_worker:
            workers.append(pods[-1])
    return pods, workers, port


def tfjob_pods(objects, work):
    tfjob = objects["TFJob"][0]
    name = tfjob["metadata"]["name"]
    ns = tfjob["metadata"]["namespace"]
    replicas = tfjob["spec"]["tfReplicaSpecs"]
    port = None
    cluster = {}
    for rtype, rs in replicas.items():
        container = rs["template"]["spec"]["containers"][0]
        port = next(p["containerPort"] for p in container["ports"]
                    if p["name"] == "tfjob-port")
        cluster[rtype.lower()] = [
            f"{name}-{rtype.lower()}-{i}.{ns}.svc:{port}"
            for i in range(rs["replicas"])]
    pods, workers = [], []
    for rtype, rs in replicas.items():
        for i in range(rs["replicas"]):
            tf_config = json.dumps({"cluster": cluster,
                                    "task": {"type": rtype.lower(), "index": i}})
            pod = Pod(f"{name}-{rtype.lower()}-{i}", rs["template"]["spec"],
                      {"TF_CONFIG": tf_config},
                      os.path.join(work, f"pod-{rtype.lower()}-{i}"))
            # As the operator labels its pods.
            pod.labels = {"training.kubeflow.org/replica-type": rtype.lower(),
                          "training.kubeflow.org/replica-index": str(i)}
            pods.append(pod)
            if rtype != "PS":
                workers.append(pod)
    return pods, workers, port


def main():
    render_dir, dtf, work, timeout = sys.argv[1:]
    objects = load(render_dir)
    if "Job" in objects:
        pods, workers, port = job_pods(objects, work)
    else:
        pods, workers, port = tfjob_pods(objects, work)
    # Every pod's DNS name -> 127.0.0.1 with a port of its own.
    addresses = {pod.name: f"127.0.0.1:{free_port()}" for pod in pods}
    for pod in pods:
        os.makedirs(pod.root)
        materialise(pod, objects)
    for pod in pods:
        for init in pod.spec.get("initContainers", []):
            rc = start(pod, init, dtf, addresses, port).wait()
            if rc != 0:
                print(open(pod.log).read())
                sys.exit(f"{pod.name}: init container {init['name']} exited {rc}")
    for pod in pods:
        pod.proc = start(pod, pod.spec["containers"][0], dtf, addresses, port)
    deadline = time.time() + float(timeout)
    status = 0
    for pod in workers:
        left = max(1, deadline - time.time())
        try:
            rc = pod.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            rc = 124
        if rc != 0 and status == 0:
            status = rc
            print(f"{pod.name} exited {rc}:\n" + open(pod.log).read())
    for pod in pods:
        if pod.proc.poll() is None:
            os.killpg(pod.proc.pid, signal.SIGTERM)
            pod.proc.wait()
    print(open(workers[0].log).read())
    sys.exit(status)


if __name__ == "__main__":
    main()
