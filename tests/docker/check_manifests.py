#!/usr/bin/python3
"""Static checks of docker/k8s/*.yaml, docker/compose.yaml and the Dockerfiles.

Run by tests/docker/run.sh (no cluster here: the Pod is played with podman
there, the Deployment, Service and HPA are checked here). Prints one line per
check, "<what>" when it holds and "FAIL <what>" when not; exits 1 on a failure.
"""
import math
import os
import re
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
failures = 0
PODMAN_STOP_S = 10  # podman kube play ignores terminationGracePeriodSeconds


def posenc_version():
    with open(os.path.join(ROOT, "include", "posenc.h"), encoding="utf-8") as fh:
        return re.search(r'^#define PE_VERSION_STRING "([^"]+)"', fh.read(), re.M).group(1)


VERSION = posenc_version()


def check(cond, what):
    global failures
    if cond:
        print(what)
    else:
        failures += 1
        print(f"FAIL {what}")


def load_all(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
        return [d for d in yaml.safe_load_all(fh) if d]


def cpu(value):
    v = str(value)
    return float(v[:-1]) / 1000 if v.endswith("m") else float(v)


def mem(value):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 1e3, "M": 1e6, "G": 1e9}
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value))
    return float(m.group(1)) * units.get(m.group(2), 1)


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def pod_checks(label, spec, posenc_name="posenc"):
    c = next(c for c in spec["containers"] if c["name"] == posenc_name)
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}

    # the probes' own listener when POSENC_PROBE_PORT sets one, else the API port
    want = int(env_of(c).get("POSENC_PROBE_PORT", {}).get("value") or 8080)

    def probe(kind, path):
        p = c.get(kind, {}).get("httpGet", {})
        port = p.get("port")
        port = ports.get(port, port)
        check(p.get("path") == path and port == want, f"{label}: {kind} is GET {path} on {want}")

    # GET /healthz, or the binary's --check, which probes it on the same port
    if "exec" in c.get("livenessProbe", {}):
        check(c["livenessProbe"]["exec"].get("command") == ["/usr/local/bin/posenc-server", "--check"],
              f"{label}: livenessProbe is posenc-server --check (GET /healthz on {want}, no curl)")
    else:
        probe("livenessProbe", "/healthz")
    probe("readinessProbe", "/readyz")
    check(c["image"].endswith(f"posenc:{VERSION}"), f"{label}: image posenc:{VERSION} (include/posenc.h's version)")
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    check(all(k in req and k in lim for k in ("cpu", "memory"))
          and cpu(req["cpu"]) <= cpu(lim["cpu"]) and mem(req["memory"]) <= mem(lim["memory"]),
          f"{label}: cpu and memory requests and limits (requests <= limits)")
    env = env_of(c)
    drain = int(env.get("POSENC_DRAIN_TIMEOUT", {}).get("value", 6))
    drain += int(env.get("POSENC_DRAIN_SEND_TIMEOUT", {}).get("value", 3))
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pre_s = int(pre[-1]) if pre and pre[0].endswith("sleep") else 0
    grace = spec.get("terminationGracePeriodSeconds", 30)
    check(grace > drain + pre_s,
          f"{label}: terminationGracePeriodSeconds {grace} > preStop {pre_s} s + drain timeouts {drain} s")
    ref = env.get("POSENC_OMP_THREADS", {}).get("valueFrom", {}).get("resourceFieldRef", {})
    check(ref.get("resource") == "limits.cpu" and ref.get("containerName", posenc_name) == posenc_name
          and str(ref.get("divisor", "1")) == "1",
          f"{label}: POSENC_OMP_THREADS = the CPU limit ({math.ceil(cpu(lim.get('cpu', 0)))})")
    sc = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser", 10001) != 0
          and sc.get("allowPrivilegeEscalation") is False,
          f"{label}: non-root, no privilege escalation")
    return c


# --- Deployment + Service + HPA + PDB ---------------------------------------
docs = load_all("docker/k8s/posenc.yaml")
by_kind = {d["kind"]: d for d in docs}
check(set(by_kind) == {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"},
      "k8s/posenc.yaml holds a Deployment, a Service, a HorizontalPodAutoscaler and a PodDisruptionBudget")
dep, svc, hpa = by_kind["Deployment"], by_kind["Service"], by_kind["HorizontalPodAutoscaler"]
pdb = by_kind["PodDisruptionBudget"]
tmpl = dep["spec"]["template"]
labels = tmpl["metadata"]["labels"]
check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(),
      "Deployment: selector matches the Pod template")
c = pod_checks("Deployment", tmpl["spec"])
check("replicas" not in dep["spec"], "Deployment: no replicas (the HPA's; podman kube play runs one Pod)")
check(not c.get("ports"), "Deployment: no containerPorts (podman kube play would publish them on 0.0.0.0)")
denv = env_of(c)
drain = int(denv.get("POSENC_DRAIN_TIMEOUT", {}).get("value", 6)) + int(
    denv.get("POSENC_DRAIN_SEND_TIMEOUT", {}).get("value", 3))
check(drain < PODMAN_STOP_S, f"Deployment: drain timeouts {drain} s < podman's stop timeout {PODMAN_STOP_S} s")
mref = denv.get("POSENC_MAX_MEMORY", {}).get("valueFrom", {}).get("resourceFieldRef", {})
res = c["resources"]
check(mref.get("resource") == "requests.memory" and str(mref.get("divisor", "1")) == "1"
      and 2 * mem(res["requests"]["memory"]) <= mem(res["limits"]["memory"]),
      "Deployment: POSENC_MAX_MEMORY = requests.memory, at most half of limits.memory")
check(svc["spec"]["selector"].items() <= labels.items(), "Service: selector matches the Deployment's Pods")
names = {p.get("name") for p in c.get("ports", [])} | {p["containerPort"] for p in c.get("ports", [])}
api_port = int(env_of(c).get("POSENC_PORT", {}).get("value") or 8080)  # the image's default
check(all(p["targetPort"] in names | {api_port} for p in svc["spec"]["ports"]),
      f"Service: targetPort is posenc's port ({api_port})")
ref = hpa["spec"]["scaleTargetRef"]
check(hpa["apiVersion"] == "autoscaling/v2" and ref["kind"] == "Deployment"
      and ref["name"] == dep["metadata"]["name"]
      and 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
      and any(m.get("resource", {}).get("name") == "cpu" for m in hpa["spec"]["metrics"]),
      "HPA: autoscaling/v2 on the Deployment's CPU, min <= max replicas")
min_up = hpa["spec"]["minReplicas"] - pdb["spec"].get("maxUnavailable", 0) if "maxUnavailable" in pdb["spec"] \
    else pdb["spec"].get("minAvailable", 0)
check(pdb["apiVersion"] == "policy/v1" and pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
      and 1 <= min_up < hpa["spec"]["minReplicas"],
      f"PodDisruptionBudget: policy/v1 on the Deployment's Pods, {min_up} of the HPA's "
      f"{hpa['spec']['minReplicas']} kept through drains")

# --- the sidecar Pod --------------------------------------------------------
pod = load_all("docker/k8s/sidecar-pod.yaml")[0]
check(pod["kind"] == "Pod" and {c["name"] for c in pod["spec"]["containers"]} == {"posenc", "tokenizer"},
      "k8s/sidecar-pod.yaml: one Pod, containers posenc and tokenizer")
pod_checks("sidecar Pod", pod["spec"])
host_ports = [p for c in pod["spec"]["containers"] for p in c.get("ports", []) if "hostPort" in p]
check(all(p.get("hostIP") == "127.0.0.1" for p in host_ports), "sidecar Pod: hostPorts on 127.0.0.1 only")
check(all(c.get("imagePullPolicy") == "Never" for c in pod["spec"]["containers"]),
      "sidecar Pod: imagePullPolicy Never (local images)")

# --- compose ----------------------------------------------------------------
comp = load_all("docker/compose.yaml")[0]
svcs = comp["services"]
check(set(svcs) == {"tokenizer", "posenc", "client"}, "compose: tokenizer, posenc and client")
published = [p for s in svcs.values() for p in s.get("ports", [])]
check(published and all(str(p).startswith("127.0.0.1:") for p in published),
      "compose: ports published on 127.0.0.1 only")
dep_on = svcs["client"].get("depends_on", {})
check(all(dep_on.get(s, {}).get("condition") == "service_healthy" for s in ("tokenizer", "posenc")),
      "compose: the client starts once tokenizer and posenc are healthy")
check(all("healthcheck" in svcs[s] for s in ("tokenizer", "posenc")), "compose: healthchecks on both services")
penv = dict(e.split("=", 1) if "=" in e else (e, None) for e in svcs["posenc"].get("environment", []))
grace = int(str(svcs["posenc"].get("stop_grace_period", "10s")).rstrip("s"))
drain = int(penv.get("POSENC_DRAIN_TIMEOUT") or 6) + int(penv.get("POSENC_DRAIN_SEND_TIMEOUT") or 3)
check(grace > drain, "compose: stop_grace_period above the drain timeouts")
budget = penv.get("POSENC_MAX_MEMORY")
check(budget and "mem_limit" in svcs["posenc"]
      and 2 * mem(budget.replace("G", "Gi").replace("M", "Mi")) <= mem(str(svcs["posenc"]["mem_limit"]).upper().replace("G", "Gi")),
      "compose: posenc's mem_limit, POSENC_MAX_MEMORY at most half of it")
check(all(svcs[s]["image"].endswith(f":{VERSION}") for s in svcs), f"compose: images tagged {VERSION}")

# --- Dockerfiles --------------------------------------------------------------
for rel in ("Dockerfile", "docker/tokenizer/Dockerfile"):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
        text = fh.read()
    runs = " ".join(re.findall(r"^RUN .*?(?<!\\)$", text, re.S | re.M))
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    check(froms and all(f == "debian:trixie" for f in froms), f"{rel}: FROM debian:trixie")
    check(re.search(r"apt-get install[^&]*&& apt-get clean", runs) is not None,
          f"{rel}: apt-get clean after the install (no downloaded .deb in the layer)")
    check(not re.search(r"\b(pip3?|curl|wget|git clone)\b", runs),
          f"{rel}: downloads nothing but Debian packages")
    check(re.search(r'^ENTRYPOINT \[', text, re.M) and re.search(r'^HEALTHCHECK .*CMD \[', text, re.M | re.S)
          and re.search(r"^USER \d+", text, re.M),
          f"{rel}: exec-form ENTRYPOINT and HEALTHCHECK, numeric non-root USER")

with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as fh:
    text = fh.read()
check(re.search(rf"^ARG POSENC_VERSION={re.escape(VERSION)}$", text, re.M)
      and 'org.opencontainers.image.version="$POSENC_VERSION"' in text,
      f"Dockerfile: POSENC_VERSION {VERSION} in the OCI labels")

sys.exit(1 if failures else 0)
