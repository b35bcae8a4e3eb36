"""A kubectl stand-in that runs the pods of Indexed Jobs as local processes.

usage: process_cluster.py [--context=C] [--namespace=NS] VERB ...

The calls dtf makes of kubectl to run, follow, fetch from and stop a
Kubernetes run:
  config current-context | config get-contexts NAME
  version [--request-timeout=T]
  apply --filename DIR_OR_FILE
  get KINDS [--selector=K=V,...] [--output=json|wide]
  logs POD [--container=C] [--tail=N]
  exec POD [--container=C] -- ARGV...
  delete KINDS [--selector=K=V,...] [--ignore-not-found]
  patch job NAME --type=merge --patch=JSON (an elastic Indexed Job's
      spec.completions and spec.parallelism, changed together)
Anything else is an error (exit 1).

The cluster's state lives in the directory $DTF_PROCESS_CLUSTER: the
applied objects in objects.json, each pod in pods/<name>/ (pod.json, its
root with the volumes materialised by run_pods.materialise, a log per
container, and `exit` once its wrapper saw the last container end). /usr/bin/dtf
in a pod is $DTF_PROCESS_CLUSTER_DTF. An Indexed Job gets one pod per
index (up to its parallelism), started detached in a session of its own
by a wrapper (this script's `_run-pod`) that runs the init containers,
then the container, and records its exit status; JOB_COMPLETION_INDEX and
HOSTNAME are set, the pods' DNS names map to loopback ports as in
run_pods.py. `apply` and `get` reconcile the way the Job controller does:
a failed pod is replaced while its index has failed at most
backoffLimitPerIndex times (or the Job at most backoffLimit times); a Job
over maxFailedIndexes fails, and when it fails or meets its
successPolicy, its pods still active are stopped and removed.
"""
import datetime
import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_pods  # noqa: E402

CONTEXT = "process-cluster"
GRACE_S = 5.0
# Kubernetes' suffix alphabet for generated names (no vowels, no 0/1/3).
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

# kubectl's names of a kind -> (kind, what `apply` and `delete` print).
KINDS = {}
for _kind, _shown, _names in [
        ("Job", "job.batch", ["jobs.batch", "job.batch", "jobs", "job"]),
        ("Service", "service", ["services", "service", "svc"]),
        ("ConfigMap", "configmap", ["configmaps", "configmap", "cm"]),
        ("Secret", "secret", ["secrets", "secret"]),
        ("Pod", "pod", ["pods", "pod", "po"])]:
    for _n in _names:
        KINDS[_n] = (_kind, _shown)
SHOWN = {kind: shown for kind, shown in KINDS.values()}


class Error(Exception):
    pass


# --- state -------------------------------------------------------------------

def state_dir():
    d = os.environ.get("DTF_PROCESS_CLUSTER")
    if not d:
        raise Error("DTF_PROCESS_CLUSTER is not set (the cluster's state "
                    "directory)")
    os.makedirs(os.path.join(d, "pods"), exist_ok=True)
    return d


class State:
    """objects.json under an exclusive lock: {"objects": [...]} where each
    object is {"kind", "namespace", "name", "manifest"} and a Job also has
    "job" (its controller's record: ports, failures, condition)."""

    def __init__(self):
        self.dir = state_dir()
        self.lock = open(os.path.join(self.dir, "lock"), "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        path = os.path.join(self.dir, "objects.json")
        self.objects = []
        if os.path.exists(path):
            with open(path) as f:
                self.objects = json.load(f)["objects"]

    def save(self):
        path = os.path.join(self.dir, "objects.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"objects": self.objects}, f, indent=1)
        os.replace(path + ".tmp", path)

    def close(self):
        self.lock.close()

    def find(self, kind, ns, name):
        for o in self.objects:
            if (o["kind"], o["namespace"], o["name"]) == (kind, ns, name):
                return o
        return None

    def pods(self, ns=None):
        result = []
        for name in sorted(os.listdir(os.path.join(self.dir, "pods"))):
            pod = load_pod(self.dir, name)
            if pod is not None and (ns is None or pod["namespace"] == ns):
                result.append(pod)
        return result


def pod_dir(d, name):
    return os.path.join(d, "pods", name)


def load_pod(d, name):
    try:
        with open(os.path.join(pod_dir(d, name), "pod.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_pod(d, pod):
    path = os.path.join(pod_dir(d, pod["name"]), "pod.json")
    with open(path + ".tmp", "w") as f:
        json.dump(pod, f, indent=1)
    os.replace(path + ".tmp", path)


# --- processes ---------------------------------------------------------------

def start_ticks(pid):
    """The process's start time (clock ticks since boot), None when it is
    gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if fields[0] == "Z":
        return None
    return fields[19]


def group_members(pgid):
    """The live (not zombie) processes of process group pgid."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def stop_groups(pgids):
    """SIGTERM to every group, SIGKILL to what is left after GRACE_S."""
    pgids = [g for g in pgids if g]
    for g in pgids:
        try:
            os.killpg(g, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + GRACE_S
    while time.time() < deadline and any(group_members(g) for g in pgids):
        time.sleep(0.05)
    for g in pgids:
        if group_members(g):
            try:
                os.killpg(g, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.time() + GRACE_S
    while time.time() < deadline and any(group_members(g) for g in pgids):
        time.sleep(0.05)


def pod_status(d, pod):
    """(phase, exit status or None): Pending while the init containers run,
    Running, then Succeeded or Failed by the wrapper's record; a pod whose
    wrapper is gone without one (killed) is Failed, 137."""
    pdir = pod_dir(d, pod["name"])
    try:
        with open(os.path.join(pdir, "exit")) as f:
            code = int(f.read().split()[0])
        return ("Succeeded" if code == 0 else "Failed"), code
    except (FileNotFoundError, ValueError, IndexError):
        pass
    if pod["pid"] <= 0:
        return "Pending", None
    if start_ticks(pod["pid"]) == pod["start_ticks"]:
        started = os.path.exists(os.path.join(pdir, "started"))
        return ("Running" if started else "Pending"), None
    # The wrapper may have written its record since the first look.
    if os.path.exists(os.path.join(pdir, "exit")):
        return pod_status(d, pod)
    return "Failed", 137


def now_text():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def dtf_binary():
    dtf = os.environ.get("DTF_PROCESS_CLUSTER_DTF")
    if not dtf:
        raise Error("DTF_PROCESS_CLUSTER_DTF is not set (the dtf binary the "
                    "pods run as /usr/bin/dtf)")
    return dtf


def objects_by_kind(state, ns):
    """The namespace's objects as run_pods.load gives them."""
    by_kind = {}
    for o in state.objects:
        if o["namespace"] == ns:
            by_kind.setdefault(o["kind"], []).append(o["manifest"])
    return by_kind


def as_run_pod(d, pod):
    job = pod["job_manifest"]
    return run_pods.Pod(pod["name"], job["spec"]["template"]["spec"],
                        pod["env"], os.path.join(pod_dir(d, pod["name"]),
                                                 "root"))


def create_pod(state, job_object, index):
    d = state.dir
    job = job_object["manifest"]
    ns, job_name = job_object["namespace"], job_object["name"]
    while True:
        suffix = "".join(random.choice(SUFFIX_ALPHABET) for _ in range(5))
        name = f"{job_name}-{index}-{suffix}"
        if not os.path.exists(pod_dir(d, name)):
            break
    os.makedirs(os.path.join(pod_dir(d, name), "root"))
    template = job["spec"]["template"]
    pod = {
        "name": name,
        "namespace": ns,
        "job": job_name,
        "index": index,
        "labels": dict(template.get("metadata", {}).get("labels", {})),
        "annotations": dict(template.get("metadata", {}).get("annotations",
                                                              {})),
        "creationTimestamp": now_text(),
        "env": {"JOB_COMPLETION_INDEX": str(index),
                "HOSTNAME": f"{job_name}-{index}"},
        "addresses": job_object["job"]["addresses"],
        "port": job_object["job"]["port"],
        "job_manifest": job,
        "dtf": dtf_binary(),
    }
    pod["annotations"]["batch.kubernetes.io/job-completion-index"] = str(index)
    pod["labels"]["batch.kubernetes.io/job-completion-index"] = str(index)
    pod["labels"]["batch.kubernetes.io/job-name"] = job_name
    pod["labels"]["job-name"] = job_name
    run_pods.materialise(as_run_pod(d, pod), objects_by_kind(state, ns))
    pdir = pod_dir(d, name)
    save_pod(d, dict(pod, pid=0, start_ticks=None))
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "_run-pod", pdir],
        stdin=subprocess.DEVNULL,
        stdout=open(os.path.join(pdir, "wrapper.log"), "ab"),
        stderr=subprocess.STDOUT, start_new_session=True,
        env=dict(os.environ))
    pod["pid"] = proc.pid
    ticks = None
    for _ in range(100):
        ticks = start_ticks(proc.pid)
        if ticks is not None or proc.poll() is not None:
            break
        time.sleep(0.01)
    pod["start_ticks"] = ticks
    save_pod(d, pod)
    return pod


def remove_pods(d, pods):
    """Stops the pods' processes and forgets them."""
    stop_groups([p["pid"] for p in pods])
    for p in pods:
        subprocess.run(["rm", "-rf", pod_dir(d, p["name"])], check=False)


def index_set(text, count):
    """"0,2-4" -> {0, 2, 3, 4}."""
    result = set()
    for part in str(text).split(","):
        if "-" in part:
            a, b = part.split("-")
            result.update(range(int(a), int(b) + 1))
        elif part:
            result.add(int(part))
    return {i for i in result if i < count}


def reconcile(state):
    """The Job controller's round: replacements, failure, success."""
    d = state.dir
    pods = state.pods()
    for o in state.objects:
        if o["kind"] != "Job":
            continue
        job, spec = o["job"], o["manifest"]["spec"]
        mine = [p for p in pods
                if p["namespace"] == o["namespace"] and p["job"] == o["name"]]
        completions = spec.get("completions", 1)
        parallelism = spec.get("parallelism", completions)
        per_index = spec.get("backoffLimitPerIndex")
        backoff = spec.get("backoffLimit", 6)
        max_failed = spec.get("maxFailedIndexes")
        succeeded, active, failures = set(), {}, {}
        for p in mine:
            phase, _ = pod_status(d, p)
            if phase == "Succeeded":
                succeeded.add(p["index"])
            elif phase == "Failed":
                failures[p["index"]] = failures.get(p["index"], 0) + 1
            else:
                active[p["index"]] = p
        if job["condition"] is None:
            # The controller's order: the backoff limits (maxFailedIndexes
            # exceeded) first, then the successPolicy, then completion, and
            # last every index finished with some failed.
            if per_index is not None:
                failed_indexes = {i for i, n in failures.items()
                                  if n > per_index and i not in succeeded}
                if max_failed is not None and len(failed_indexes) > max_failed:
                    job["condition"] = "Failed"
            else:
                failed_indexes = set()
                if sum(failures.values()) > backoff:
                    job["condition"] = "Failed"
            if job["condition"] is None:
                if len(succeeded) >= completions:
                    job["condition"] = "Complete"
                for rule in spec.get("successPolicy", {}).get("rules", []):
                    want = rule.get("succeededIndexes")
                    want = (index_set(want, completions) if want is not None
                            else set(range(completions)))
                    count = rule.get("succeededCount", len(want))
                    if len(want & succeeded) >= count:
                        job["condition"] = "Complete"
            if (job["condition"] is None and failed_indexes and not active
                    and len(failed_indexes) + len(succeeded) >= completions):
                job["condition"] = "Failed"
        if job["condition"] is not None:
            # The controller deletes the Job's pods still active.
            remove_pods(d, list(active.values()))
            continue
        for index in range(completions):
            if len(active) >= parallelism:
                break
            if (index in succeeded or index in active
                    or index in failed_indexes):
                continue
            active[index] = create_pod(state, o, index)
    state.save()


# --- the pod's wrapper -------------------------------------------------------

def run_pod(pdir):
    """_run-pod POD_DIR: the pod's init containers in turn, then its
    container; `exit` records the status of the last one run."""
    with open(os.path.join(pdir, "pod.json")) as f:
        pod = json.load(f)
    spec = pod["job_manifest"]["spec"]["template"]["spec"]
    rp = run_pods.Pod(pod["name"], spec, pod["env"],
                      os.path.join(pdir, "root"))
    addresses, port = pod["addresses"], pod["port"]
    code = 0
    steps = [(c, False) for c in spec.get("initContainers", [])]
    steps.append((spec["containers"][0], True))
    for container, main in steps:
        argv = run_pods.local_argv(rp, container, pod["dtf"], addresses, port)
        env = run_pods.container_env(rp, container, addresses, port)
        with open(os.path.join(pdir, container["name"] + ".log"), "ab") as log:
            if main:
                # Running from here: its log can be read.
                open(os.path.join(pdir, "started"), "w").close()
            try:
                code = subprocess.call(argv, env=env, cwd=rp.root,
                                       stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT)
            except OSError as e:
                log.write(f"{e}\n".encode())
                code = 128
        if code < 0:
            code = 128 - code
        if code != 0:
            break
    with open(os.path.join(pdir, "exit.tmp"), "w") as f:
        f.write(f"{code}\n")
    os.replace(os.path.join(pdir, "exit.tmp"), os.path.join(pdir, "exit"))


# --- verbs -------------------------------------------------------------------

def parse_selector(text):
    if not text:
        return {}
    selector = {}
    for part in text.split(","):
        if "=" not in part:
            raise Error(f"selector {text!r}: only K=V terms are understood")
        k, v = part.split("=", 1)
        selector[k.rstrip("=")] = v
    return selector


def matches(labels, selector):
    return all(labels.get(k) == v for k, v in selector.items())


def parse_kinds(text):
    kinds = []
    for n in text.split(","):
        if n not in KINDS:
            raise Error(f'the server doesn\'t have a resource type "{n}"')
        kinds.append(KINDS[n][0])
    return kinds


def options(args, known, positional_max):
    """--name=value / --name value / --flag for the names in `known`
    ({name: takes_value}); the rest positional."""
    opts, rest = {}, []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name not in known:
                raise Error(f"unknown flag: --{name}")
            if known[name] and not eq:
                i += 1
                if i >= len(args):
                    raise Error(f"flag needs an argument: --{name}")
                value = args[i]
            opts[name] = value if known[name] else True
        else:
            rest.append(a)
        i += 1
    if len(rest) > positional_max:
        raise Error(f"unexpected arguments: {' '.join(rest[positional_max:])}")
    return opts, rest


def cmd_config(args, context):
    if args == ["current-context"]:
        print(CONTEXT)
        return 0
    if len(args) == 2 and args[0] == "get-contexts":
        if args[1] != CONTEXT:
            raise Error(f'context {args[1]} not found')
        print("CURRENT   NAME              CLUSTER           AUTHINFO   NAMESPACE")
        print(f"*         {CONTEXT}   {CONTEXT}   local")
        return 0
    raise Error(f"config {' '.join(args)}: not understood here")


def cmd_version(args, ns):
    options(args, {"request-timeout": True}, 0)
    print("Client Version: v1.33.0 (process-cluster)")
    print("Server Version: v1.33.0 (process-cluster)")
    return 0


def read_manifests(path):
    files = ([os.path.join(path, n) for n in sorted(os.listdir(path))
              if n.endswith((".yaml", ".yml", ".json"))]
             if os.path.isdir(path) else [path])
    docs = []
    for name in files:
        with open(name) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((name, doc))
    if not docs:
        raise Error(f"no objects passed to apply ({path})")
    return docs


def cmd_apply(args, ns):
    opts, _ = options(args, {"filename": True}, 0)
    if "filename" not in opts:
        raise Error("must specify --filename")
    docs = read_manifests(opts["filename"])
    state = State()
    try:
        for name, doc in docs:
            kind = doc.get("kind")
            if kind not in SHOWN or kind == "Pod":
                raise Error(f'{name}: resource mapping not found for kind '
                            f'"{kind}" in version "{doc.get("apiVersion")}"')
            meta = doc["metadata"]
            doc_ns = meta.get("namespace", ns)
            if doc_ns != ns:
                raise Error(f'the namespace from the provided object '
                            f'"{doc_ns}" does not match the namespace '
                            f'"{ns}". You must pass \'--namespace={doc_ns}\' '
                            f'to perform this operation.')
            if kind == "Job" and doc["spec"].get("completionMode") != "Indexed":
                raise Error(f"{name}: job {meta['name']}: only Indexed Jobs "
                            f"run here")
            old = state.find(kind, ns, meta["name"])
            if old is not None:
                if old["manifest"] == doc:
                    print(f"{SHOWN[kind]}/{meta['name']} unchanged")
                    continue
                if kind == "Job":
                    raise Error(f'The Job "{meta["name"]}" is invalid: '
                                f'spec.template: field is immutable')
                old["manifest"] = doc
                print(f"{SHOWN[kind]}/{meta['name']} configured")
                continue
            o = {"kind": kind, "namespace": ns, "name": meta["name"],
                 "manifest": doc, "created": now_text()}
            if kind == "Job":
                completions = doc["spec"].get("completions", 1)
                containers = doc["spec"]["template"]["spec"]["containers"]
                ports = containers[0].get("ports", [])
                port = ports[0]["containerPort"] if ports else None
                o["job"] = {
                    "condition": None,
                    "port": port,
                    # Each pod's DNS name -> a loopback port of its own.
                    "addresses": ({f"{meta['name']}-{i}":
                                   f"127.0.0.1:{run_pods.free_port()}"
                                   for i in range(completions)}
                                  if port is not None else {}),
                }
            state.objects.append(o)
            print(f"{SHOWN[kind]}/{meta['name']} created")
        state.save()
        reconcile(state)
    finally:
        state.close()
    return 0


def pod_json(d, pod):
    phase, code = pod_status(d, pod)
    spec = pod["job_manifest"]["spec"]["template"]["spec"]
    container = spec["containers"][0]["name"]
    if phase in ("Succeeded", "Failed"):
        state = {"terminated": {"exitCode": code,
                                "reason": "Completed" if code == 0 else "Error"}}
    elif phase == "Running":
        state = {"running": {"startedAt": pod["creationTimestamp"]}}
    else:
        state = {"waiting": {"reason": "PodInitializing"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod["name"],
            "namespace": pod["namespace"],
            "labels": pod["labels"],
            "annotations": pod["annotations"],
            "creationTimestamp": pod["creationTimestamp"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                 "name": pod["job"], "controller": True}],
        },
        "spec": {"hostname": f"{pod['job']}-{pod['index']}",
                 "containers": [{"name": c["name"]}
                                for c in spec["containers"]]},
        "status": {"phase": phase,
                   "containerStatuses": [{"name": container, "state": state,
                                          "ready": phase == "Running"}]},
    }


def object_json(o):
    doc = dict(o["manifest"])
    doc["metadata"] = dict(doc["metadata"], namespace=o["namespace"],
                           creationTimestamp=o["created"])
    if o["kind"] == "Job" and o["job"]["condition"] is not None:
        doc["status"] = {"conditions": [{"type": o["job"]["condition"],
                                         "status": "True"}]}
    return doc


def cmd_get(args, ns):
    opts, rest = options(args, {"selector": True, "output": True}, 1)
    if not rest:
        raise Error("you must specify the type of resource to get")
    kinds = parse_kinds(rest[0])
    selector = parse_selector(opts.get("selector"))
    output = opts.get("output", "")
    if output not in ("", "json", "wide"):
        raise Error(f"--output={output}: not understood here")
    state = State()
    try:
        reconcile(state)
        items, rows = [], []
        for kind in kinds:
            if kind == "Pod":
                for p in state.pods(ns):
                    if matches(p["labels"], selector):
                        items.append(pod_json(state.dir, p))
                        phase, code = pod_status(state.dir, p)
                        rows.append((f"pod/{p['name']}", phase,
                                     "" if code is None else f"exit {code}"))
                continue
            for o in state.objects:
                if (o["kind"] == kind and o["namespace"] == ns and
                        matches(o["manifest"]["metadata"].get("labels", {}),
                                selector)):
                    items.append(object_json(o))
                    status = ""
                    if kind == "Job":
                        status = o["job"]["condition"] or "Running"
                    rows.append((f"{SHOWN[kind]}/{o['name']}", status,
                                 o["created"]))
    finally:
        state.close()
    if output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items,
                          "metadata": {"resourceVersion": ""}}, indent=4))
    elif not rows:
        print(f"No resources found in {ns} namespace.", file=sys.stderr)
    else:
        width = max(len(r[0]) for r in rows)
        print(f"{'NAME':<{width}}   STATUS      DETAIL")
        for r in rows:
            print(f"{r[0]:<{width}}   {r[1]:<10}  {r[2]}")
    return 0


def find_pod(d, ns, name):
    pod = load_pod(d, name)
    if pod is None or pod["namespace"] != ns:
        raise Error(f'Error from server (NotFound): pods "{name}" not found')
    return pod


def pod_container(pod, name):
    spec = pod["job_manifest"]["spec"]["template"]["spec"]
    containers = spec.get("initContainers", []) + spec["containers"]
    if name is None:
        return spec["containers"][0]
    for c in containers:
        if c["name"] == name:
            return c
    raise Error(f"container {name} is not valid for pod {pod['name']}")


def cmd_logs(args, ns):
    opts, rest = options(args, {"container": True, "tail": True}, 1)
    if not rest:
        raise Error("expected POD")
    d = state_dir()
    pod = find_pod(d, ns, rest[0])
    container = pod_container(pod, opts.get("container"))
    path = os.path.join(pod_dir(d, pod["name"]), container["name"] + ".log")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise Error(f'container "{container["name"]}" in pod '
                    f'"{pod["name"]}" is waiting to start: PodInitializing')
    tail = int(opts.get("tail", "-1"))
    if tail >= 0:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[len(lines) - tail:] if tail else [])
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


def cmd_exec(args, ns):
    if "--" not in args:
        raise Error("exec: expected -- COMMAND")
    cut = args.index("--")
    opts, rest = options(args[:cut], {"container": True}, 1)
    argv = args[cut + 1:]
    if not rest or not argv:
        raise Error("exec: expected POD -- COMMAND")
    d = state_dir()
    pod = find_pod(d, ns, rest[0])
    container = pod_container(pod, opts.get("container"))
    phase, _ = pod_status(d, pod)
    if phase != "Running":
        raise Error(f"cannot exec into a container in a completed pod; "
                    f"current phase is {phase}" if phase != "Pending" else
                    f"pod {pod['name']} is not running (Pending)")
    rp = as_run_pod(d, pod)
    addresses, port = pod["addresses"], pod["port"]
    argv = run_pods.map_argv(rp, container, argv, pod["dtf"], addresses, port)
    env = run_pods.container_env(rp, container, addresses, port)
    sys.stdout.flush()
    try:
        code = subprocess.call(argv, env=env, cwd=rp.root,
                               stdin=subprocess.DEVNULL)
    except OSError as e:
        print(f"error: exec {argv[0]}: {e}", file=sys.stderr)
        return 126
    return code if code >= 0 else 128 - code


def cmd_patch(args, ns):
    """A merge patch of a Job's completions and parallelism: Kubernetes
    lets an Indexed Job change its completions only together with its
    parallelism, to the same value (an elastic Indexed Job)."""
    opts, rest = options(args, {"type": True, "patch": True}, 2)
    if len(rest) != 2 or KINDS.get(rest[0], ("",))[0] != "Job":
        raise Error("only `patch job NAME` is served here")
    if opts.get("type") != "merge" or "patch" not in opts:
        raise Error("only --type=merge --patch=JSON is served here")
    try:
        patch = json.loads(opts["patch"])
    except json.JSONDecodeError as e:
        raise Error(f"--patch: {e}")
    spec = patch.get("spec", {}) if isinstance(patch, dict) else {}
    if set(patch) != {"spec"} or not spec or \
            not set(spec) <= {"completions", "parallelism"}:
        raise Error("only spec.completions and spec.parallelism are "
                    "patched here")
    state = State()
    try:
        o = state.find("Job", ns, rest[1])
        if o is None:
            raise Error(f'Error from server (NotFound): jobs.batch '
                        f'"{rest[1]}" not found')
        old = o["manifest"]["spec"]
        new = dict(old, **spec)
        if new.get("completions") != old.get("completions") and \
                new.get("completions") != new.get("parallelism"):
            raise Error(f'The Job "{rest[1]}" is invalid: spec.completions: '
                        f'Invalid value: {new.get("completions")}: can only '
                        f'be modified in tandem with spec.parallelism')
        if new == old:
            print(f"job.batch/{rest[1]} patched (no change)")
            return 0
        o["manifest"]["spec"] = new
        # The new indexes' pods get loopback ports of their own.
        addresses = o["job"]["addresses"]
        if o["job"]["port"] is not None:
            for i in range(new.get("completions", 1)):
                addresses.setdefault(f"{rest[1]}-{i}",
                                     f"127.0.0.1:{run_pods.free_port()}")
        state.save()
        reconcile(state)
    finally:
        state.close()
    print(f"job.batch/{rest[1]} patched")
    return 0


def cmd_delete(args, ns):
    opts, rest = options(args, {"selector": True, "ignore-not-found": False}, 1)
    if not rest:
        raise Error("you must specify the type of resource to delete")
    kinds = parse_kinds(rest[0])
    selector = parse_selector(opts.get("selector"))
    state = State()
    try:
        doomed_objects = [
            o for o in state.objects
            if o["kind"] in kinds and o["namespace"] == ns
            and matches(o["manifest"]["metadata"].get("labels", {}), selector)]
        jobs = {o["name"] for o in doomed_objects if o["kind"] == "Job"}
        doomed_pods = [p for p in state.pods(ns)
                       if p["job"] in jobs or
                       ("Pod" in kinds and matches(p["labels"], selector))]
        remove_pods(state.dir, doomed_pods)
        state.objects = [o for o in state.objects if o not in doomed_objects]
        state.save()
    finally:
        state.close()
    for o in doomed_objects:
        print(f'{SHOWN[o["kind"]]} "{o["name"]}" deleted')
    if "Pod" in kinds:
        for p in doomed_pods:
            print(f'pod "{p["name"]}" deleted')
    if not doomed_objects and not doomed_pods and \
            "ignore-not-found" not in opts:
        print(f"No resources found", file=sys.stderr)
    return 0


def main(argv):
    if argv[:1] == ["_run-pod"]:
        run_pod(argv[1])
        return 0
    ns, context = "default", None
    while argv and argv[0].startswith("-"):
        a = argv.pop(0)
        if a.startswith("--namespace="):
            ns = a.split("=", 1)[1]
        elif a in ("--namespace", "-n") and argv:
            ns = argv.pop(0)
        elif a.startswith("--context="):
            context = a.split("=", 1)[1]
        else:
            raise Error(f"unknown flag: {a}")
    if context is not None and context != CONTEXT:
        raise Error(f"context was not found for specified context: {context}")
    if not argv:
        raise Error("no command given")
    verb, args = argv[0], argv[1:]
    verbs = {"version": cmd_version, "apply": cmd_apply, "get": cmd_get,
             "logs": cmd_logs, "exec": cmd_exec, "delete": cmd_delete,
             "patch": cmd_patch}
    if verb == "config":
        return cmd_config(args, context)
    if verb not in verbs:
        raise Error(f'unknown command "{verb}" for "kubectl"')
    return verbs[verb](args, ns)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Error as e:
        message = str(e)
        if not message.startswith("Error from server"):
            message = "error: " + message
        print(message, file=sys.stderr)
        sys.exit(1)
