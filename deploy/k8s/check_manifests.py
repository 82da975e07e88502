#!/usr/bin/env python3
"""Check deploy/k8s without a cluster: every file parses as YAML, every object has apiVersion
and kind, every kustomization's resources and env files exist, every workload reads the
bert-train-env ConfigMap and runs with a securityContext. Exit 1 with the problems otherwise."""
import glob
import os
import sys

import yaml

root = os.path.dirname(os.path.abspath(__file__))
problems = []
objects = 0
for path in sorted(glob.glob(os.path.join(root, "**", "*.yaml"), recursive=True)):
    rel = os.path.relpath(path, root)
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    except yaml.YAMLError as e:
        problems.append(f"{rel}: not valid YAML: {e}")
        continue
    for d in docs:
        objects += 1
        if not isinstance(d, dict) or "apiVersion" not in d or "kind" not in d:
            problems.append(f"{rel}: object without apiVersion/kind")
            continue
        here = os.path.dirname(path)
        if d["kind"] == "Kustomization":
            for r in d.get("resources", []):
                if not os.path.exists(os.path.join(here, r)):
                    problems.append(f"{rel}: resource {r} does not exist")
            for g in d.get("configMapGenerator", []):
                for e in g.get("envs", []):
                    if not os.path.exists(os.path.join(here, e)):
                        problems.append(f"{rel}: env file {e} does not exist")
            continue
        if d["kind"] in ("Job", "MPIJob", "PyTorchJob"):
            text = yaml.safe_dump(d)
            if "bert-train-env" not in text:
                problems.append(f"{rel}: {d['kind']} does not read the bert-train-env ConfigMap")
            if "runAsUser" not in text or "runAsGroup" not in text:
                problems.append(f"{rel}: {d['kind']} has no securityContext runAsUser/runAsGroup")
for p in problems:
    print(p, file=sys.stderr)
print(f"check_manifests: {objects} objects, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
