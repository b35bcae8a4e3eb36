"""Validates rendered Kubernetes manifests offline.

usage: validate_manifests.py TFJOB_SCHEMA K8S_VERSION FILE_OR_DIR...

Every YAML document of every file (a directory: its *.yaml files) is
checked: core and batch objects with kubernetes-validate in strict mode
(unknown fields rejected) against Kubernetes K8S_VERSION's OpenAPI schemas;
a TFJob against the openAPIV3Schema of Kubeflow's TFJob CRD (TFJOB_SCHEMA,
with jsonschema), and each of its replica templates as a strict v1
PodTemplate. Prints one line per object; exits 1 on the first failure.
"""
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml


def documents(path):
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.endswith(".yaml"):
                yield from documents(os.path.join(path, name))
        return
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if doc is not None:
                yield path, doc


def strict(doc, version, what):
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        sys.exit(f"{what}: {e.message} at {list(e.path)}")


def main():
    schema_path, version, *paths = sys.argv[1:]
    with open(schema_path) as f:
        tfjob_schema = json.load(f)
    count = 0
    for path in paths:
        for where, doc in documents(path):
            what = f"{where}: {doc.get('kind')} {doc['metadata']['name']}"
            if doc.get("kind") == "TFJob":
                try:
                    jsonschema.validate(doc, tfjob_schema)
                except jsonschema.ValidationError as e:
                    sys.exit(f"{what}: {e.message} at {list(e.path)}")
                for role, spec in doc["spec"]["tfReplicaSpecs"].items():
                    template = {
                        "apiVersion": "v1",
                        "kind": "PodTemplate",
                        "metadata": {"name": f"{doc['metadata']['name']}-{role.lower()}"},
                        "template": spec["template"],
                    }
                    strict(template, version, f"{what} {role} template")
            else:
                strict(doc, version, what)
            print(f"valid: {what}")
            count += 1
    if count == 0:
        sys.exit("no documents")


if __name__ == "__main__":
    main()
