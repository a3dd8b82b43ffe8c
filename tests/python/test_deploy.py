"""deploy/: what can be checked on this machine without a cluster.

- systemd: the unit and its network drop-in pass `systemd-analyze verify` (the binary
  path pointed at the build) with no warning, and `systemd-analyze security` rates the
  unit's hardening OK.
- every collector flag named in a unit, a manifest, the Containerfile or the Slurm prolog
  is one `trainscope-collector --help` lists.
- Kubernetes: every manifest parses as YAML with the expected objects (a StatefulSet with
  a volume claim, a DaemonSet, Services, the rules ConfigMap, a Job that sets
  TRAINSCOPE_COLLECTOR), mounts what its flags read, and the rules ConfigMap loads in the
  real collector.
- container: the stage scripts pass shellcheck; build-stage.sh's runtime package list,
  run against build/bin, names installed Debian packages that hold the libraries.
- Slurm: the prolog starts a real collector, a task sourcing trainscope-env.sh streams to
  it (trainscope-loadgen) and the CLI sees the job, the epilog stops it.

What needs a cluster (an image build, kubectl apply, a real Slurm) is in docs/deploy.md.
Run: /usr/bin/python3 -m pytest tests/python/test_deploy.py
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BIN_DIR, CLI_BIN, COLLECTOR_BIN, REPO, Collector

yaml = pytest.importorskip("yaml", reason="python3-yaml (scripts/setup.sh installs it)")

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "trainscope-collector.service"
DROP_IN = DEPLOY / "systemd" / "trainscope-collector.service.d" / "network.conf"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
SHELL_SCRIPTS = [DEPLOY / "container" / "build-stage.sh", DEPLOY / "container" / "runtime-stage.sh",
                 DEPLOY / "slurm" / "prolog.sh", DEPLOY / "slurm" / "epilog.sh",
                 DEPLOY / "slurm" / "trainscope-env.sh", DEPLOY / "slurm" / "train.sbatch"]
LOADGEN_BIN = BIN_DIR / "trainscope-loadgen"


def need(binary: pathlib.Path):
    if not binary.exists():
        pytest.skip(f"{binary} is not built (TRAINSCOPE_BUILD_DIR selects the build dir)")


def collector_flags() -> set[str]:
    need(COLLECTOR_BIN)
    text = subprocess.run([str(COLLECTOR_BIN), "--help"], capture_output=True, text=True,
                          timeout=30).stdout
    # One flag per line ("  --data-dir DIR", "  --fsync"); '-' and '_' spell the same flag.
    flags = {m.replace("-", "_") for m in re.findall(r"^\s+--([a-z][a-z_-]*)(?: |$)", text, re.M)}
    assert {"listen", "tls_cert", "curve_secret_key", "insecure"} <= flags, text[:2000]
    return flags


def flags_in(text: str) -> set[str]:
    """The --flag names of every trainscope-collector command line in `text`."""
    names = set()
    # The binary by name, or the prolog's "$collector"; continuation lines included.
    for line in re.findall(r"(?:trainscope-collector|\$collector)[^\n]*(?:\n[ \t]+[^\n]*)*",
                           text):
        names.update(m.replace("-", "_") for m in re.findall(r"--([a-z][a-z-]*)", line))
    return names


def manifest_docs() -> dict[str, list[dict]]:
    return {path.name: [d for d in yaml.safe_load_all(path.read_text()) if d]
            for path in MANIFESTS}


def test_every_collector_flag_deploy_names_exists():
    known = collector_flags()
    sources = {UNIT: UNIT.read_text(), DROP_IN: DROP_IN.read_text(),
               DEPLOY / "slurm" / "prolog.sh": (DEPLOY / "slurm" / "prolog.sh").read_text(),
               DEPLOY / "container" / "Containerfile":
                   (DEPLOY / "container" / "Containerfile").read_text()}
    for path, text in sources.items():
        used = flags_in(text)
        assert used, f"{path}: no trainscope-collector command line found"
        assert used <= known, f"{path}: unknown collector flags {sorted(used - known)}"
    for name, docs in manifest_docs().items():
        for doc in docs:
            for container in doc.get("spec", {}).get("template", {}).get("spec", {}).get(
                    "containers", []):
                if "trainscope-collector" not in container.get("image", ""):
                    continue
                used = {a[2:].split("=")[0].replace("-", "_") for a in container["args"]}
                assert used <= known, f"{name}: unknown collector flags {sorted(used - known)}"


def test_systemd_unit_and_drop_in_verify_and_are_hardened(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze (Debian's systemd package; scripts/setup.sh installs it)")
    need(COLLECTOR_BIN)
    (tmp_path / "trainscope-collector.service.d").mkdir()
    for source, target in ((UNIT, tmp_path / UNIT.name),
                           (DROP_IN, tmp_path / "trainscope-collector.service.d" / DROP_IN.name)):
        target.write_text(source.read_text().replace("/usr/local/bin/trainscope-collector",
                                                     str(COLLECTOR_BIN)))
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{tmp_path}:", "SYSTEMD_LOG_COLOR": "0"}
    verify = subprocess.run(["systemd-analyze", "verify", "--man=no", UNIT.name], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stderr
    # Unknown keys and bad values are only warnings: none may appear.
    assert verify.stdout.strip() == "" and verify.stderr.strip() == "", verify.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=yes", UNIT.name],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)",
                      security.stdout + security.stderr)
    assert match, security.stdout + security.stderr
    # systemd's scale: 0 (locked down) .. 10 (unprotected); "OK" is below 2.
    assert float(match.group(1)) < 2.0 and match.group(2) == "OK", match.group(0)
    unit = UNIT.read_text()
    for setting in ("User=trainscope", "StateDirectory=trainscope", "ProtectSystem=strict",
                    "NoNewPrivileges=yes", "CapabilityBoundingSet=\n"):
        assert setting in unit, setting


def test_kubernetes_manifests_parse_and_hang_together():
    docs = manifest_docs()
    kinds = {name: [d["kind"] for d in ds] for name, ds in docs.items()}
    assert kinds["job-collector.yaml"] == ["StatefulSet", "Service", "Service"]
    assert kinds["node-collector.yaml"] == ["DaemonSet"]
    assert kinds["rules-configmap.yaml"] == ["ConfigMap"]
    assert kinds["training-job-example.yaml"] == ["Job"]
    kustomize = docs["kustomization.yaml"][0]
    assert set(kustomize["resources"]) <= {p.name for p in MANIFESTS}

    statefulset = docs["job-collector.yaml"][0]
    assert statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    for doc in (statefulset, docs["node-collector.yaml"][0]):
        pod = doc["spec"]["template"]["spec"]
        container = pod["containers"][0]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"] for v in pod.get("volumes", [])} | {"data"}
        assert set(mounts) <= volumes, (doc["kind"], mounts, volumes)
        # Every file a flag reads lies under a mounted volume.
        for arg in container["args"]:
            value = arg.split("=", 1)[1] if "=" in arg else ""
            if value.startswith("/"):
                assert any(value.startswith(path + "/") for path in mounts.values()), arg
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        # Beyond loopback in a pod: TLS with a client CA and CURVE with a client list.
        args = " ".join(container["args"])
        for flag in ("--tls-cert", "--tls-key", "--tls-client-ca", "--curve-secret-key",
                     "--curve-client-keys"):
            assert flag in args, (doc["kind"], flag)
        # One job key for every collector, from a secret no other user can read
        # (the collector refuses a key file readable by others).
        assert "--job-key-file=/etc/trainscope/job-key/job.key" in args, doc["kind"]
        key_volume = next(v for v in pod["volumes"] if v["name"] == "job-key")
        assert key_volume["secret"]["secretName"] == "trainscope-job-key"
        assert key_volume["secret"]["defaultMode"] & 0o007 == 0
    selector = statefulset["spec"]["template"]["metadata"]["labels"]
    for service in docs["job-collector.yaml"][1:]:
        assert all(selector.get(k) == v for k, v in service["spec"]["selector"].items())
        assert {p["name"] for p in service["spec"]["ports"]} <= {"grpc", "feed", "snapshot"}

    job = docs["training-job-example.yaml"][0]
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TRAINSCOPE_COLLECTOR"]["value"] == "$(NODE_IP):7070"
    assert env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert {"TRAINSCOPE_TLS_CA", "TRAINSCOPE_TLS_CERT", "TRAINSCOPE_TLS_KEY"} <= set(env)
    # The pods get their job's secret, not the key, from a mounted secret.
    pod = job["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    secret_file = env["TRAINSCOPE_JOB_SECRET_FILE"]["value"]
    assert secret_file.startswith(mounts["job-secret"] + "/"), secret_file
    assert "TRAINSCOPE_JOB_KEY_FILE" not in env


def test_the_rules_configmap_loads_in_the_real_collector(tmp_path):
    need(COLLECTOR_BIN)
    rules = manifest_docs()["rules-configmap.yaml"][0]["data"]["rules.textproto"]
    (tmp_path / "rules.textproto").write_text(rules)
    collector = Collector(tmp_path, extra_args=[f"--rules={tmp_path / 'rules.textproto'}"])
    collector.start()  # raises with the collector's message if it refuses the rules
    collector.stop()
    (tmp_path / "broken.textproto").write_text(rules.replace("z_threshold", "z_treshold"))
    refused = subprocess.run([str(COLLECTOR_BIN), f"--rules={tmp_path / 'broken.textproto'}",
                              f"--data-dir={tmp_path / 'data2'}"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--rules" in refused.stderr


def test_shell_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        pytest.skip("no shellcheck (scripts/setup.sh installs it)")
    result = subprocess.run(["shellcheck", "-x", *map(str, SHELL_SCRIPTS)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_container_stages_and_runtime_packages():
    need(COLLECTOR_BIN)
    need(CLI_BIN)
    containerfile = (DEPLOY / "container" / "Containerfile").read_text()
    stages = re.findall(r"^FROM (\S+) AS (\w+)", containerfile, re.M)
    assert stages == [("debian:bookworm", "build"), ("debian:bookworm-slim", "runtime")]
    # The build stage installs exactly scripts/setup.sh's packages, by running it.
    assert "RUN scripts/setup.sh" in containerfile
    for script in ("build-stage.sh", "runtime-stage.sh"):
        assert os.access(DEPLOY / "container" / script, os.X_OK), script
    listed = subprocess.run(
        [str(DEPLOY / "container" / "build-stage.sh"), "--runtime-packages", str(COLLECTOR_BIN),
         str(CLI_BIN)], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    packages = listed.stdout.split()
    assert {"libgrpc++1.51", "libzmq5", "libprotobuf32", "libc6"} <= set(packages), packages
    for package in packages:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True, timeout=30)
        assert "install ok installed" in status.stdout, package
    # A binary that is not a dynamic executable is refused with its name.
    bad = subprocess.run([str(DEPLOY / "container" / "build-stage.sh"), "--runtime-packages",
                          str(DEPLOY / "README.md")], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "README.md" in bad.stderr


def test_slurm_prolog_env_and_epilog_run_a_real_collector(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        need(binary)
    if os.geteuid() != 0:
        pytest.skip("the prolog runs as root (it starts the collector as the job's user)")
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAINSCOPE_", "SLURM_"))}
    env.update(SLURM_JOB_ID="4242", SLURM_JOB_USER=user, SLURM_PROCID="0", SLURM_NTASKS="1",
               SLURM_LOCALID="0", TRAINSCOPE_SLURM_ROOT=str(tmp_path),
               TRAINSCOPE_COLLECTOR_BIN=str(COLLECTOR_BIN))
    # Without a running systemd (containers, CI) the prolog takes its setsid path.
    systemd = pathlib.Path("/run/systemd/system").is_dir()
    prolog = subprocess.run(["sh", str(DEPLOY / "slurm" / "prolog.sh")], env=env,
                            capture_output=True, text=True, timeout=60)
    try:
        assert prolog.returncode == 0, prolog.stderr
        task = subprocess.run(
            ["sh", "-c", f'. "{DEPLOY / "slurm" / "trainscope-env.sh"}" && '
                         f'test "$RANK" = 0 && test "$WORLD_SIZE" = 1 && '
                         f'"{LOADGEN_BIN}" --collector "$TRAINSCOPE_COLLECTOR" '
                         f'--job "$TRAINSCOPE_JOB" --events 500 && '
                         f'"{CLI_BIN}" status "$TRAINSCOPE_JOB" --json'],
            env=env, capture_output=True, text=True, timeout=120)
        assert task.returncode == 0, task.stderr
        assert '"acked":500' in task.stdout and "slurm-4242" in task.stdout, task.stdout
        # The ranks proved membership with the job's own key, private to its user.
        key = tmp_path / "4242" / "job.key"
        assert key.stat().st_mode & 0o777 == 0o600
        assert len(key.read_text().strip()) == 64
        outsider = subprocess.run(
            [str(LOADGEN_BIN), "--collector",
             (tmp_path / "4242" / "ports").read_text().split("agents=")[1].split()[0],
             "--job", "slurm-4242", "--events", "10", "--token", "not-the-secret"],
            env={k: v for k, v in env.items() if k not in ("HOME", "XDG_CONFIG_HOME")},
            capture_output=True, text=True, timeout=60)
        assert outsider.returncode != 0 and "PERMISSION_DENIED" in outsider.stderr, \
            outsider.stderr
    finally:
        epilog = subprocess.run(["sh", str(DEPLOY / "slurm" / "epilog.sh")], env=env,
                                capture_output=True, text=True, timeout=120)
    assert epilog.returncode == 0, epilog.stderr
    assert not (tmp_path / "4242" / "ports").exists()
    if not systemd:  # the transient unit logs to the journal instead
        assert not (tmp_path / "4242" / "pid").exists()
        log = (tmp_path / "4242" / "collector.log").read_text()
        assert "SIGTERM received" in log and "stopped;" in log, log
    assert (tmp_path / "4242" / "data" / "jobs" / "slurm-4242").is_dir()
