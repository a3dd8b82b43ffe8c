"""The collector tier on NATS JetStream (docs/scale.md), with real processes: a
real nats-server (JetStream, store in a temporary folder, free port), node
collectors with --publish fed by trainscope-loadgen, and one job-level
collector with --upstream. The job-level view must be the union of the nodes'
logs, event for event, through kills and restarts of the server and of a
node collector; NATS unreachable at start is said and buffered; duplicate
delivery changes nothing; a halt at the job level stops the ranks of every
node.
"""

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from conftest import (CLI_BIN, COLLECTOR_BIN, DUMP_LOG_EVENTS_BIN, EXPIRED_CERT_SCRIPT, free_port,
                      wait_for)
from tier_util import (LOADGEN_BIN, NATS_SERVER, STEP_MARK, NatsServer, job_level_collector,
                       logged_events, node_collector, read_status, start_loadgen, view)

JOB = "tier.job"  # a dot: subjects must escape it
COLLECTIVE, GPU_COLLECTIVE = 4, 11  # trainscope.v1.EventKind

pytestmark = pytest.mark.skipif(
    not all(os.path.exists(p) for p in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN,
                                        DUMP_LOG_EVENTS_BIN, NATS_SERVER)),
    reason="needs trainscope-collector, trainscope, trainscope-loadgen, dump_log_events "
           "(build them) and nats-server (scripts/setup.sh)")


def union_of(nodes):
    events = []
    for node in nodes:
        events += logged_events(node.job_dir(JOB))
    return view(events)


def wait_for_union(job_level, nodes, timeout_s=60.0):
    """Waits until the job level holds exactly the nodes' events; explains when not."""
    deadline = time.monotonic() + timeout_s
    while True:
        want_events, want_steps = union_of(nodes)
        got_events, got_steps = view(logged_events(job_level.job_dir(JOB)))
        if want_events and got_events == want_events and got_steps == want_steps:
            return want_events, want_steps
        if time.monotonic() > deadline:
            lines = []
            for rank in sorted(set(want_events) | set(got_events)):
                want, got = want_events.get(rank), got_events.get(rank)
                want_n = sum(want.values()) if want else 0
                got_n = sum(got.values()) if got else 0
                extra = sum((got - want).values()) if want and got else got_n
                lines.append(f"rank {rank}: nodes {want_n} events, job level {got_n} "
                             f"({extra} not on any node)")
            pytest.fail("the job-level view is not the union of the nodes:\n" + "\n".join(lines)
                        + f"\njob level:\n{job_level.output()[-3000:]}"
                        + f"\nupstream: {read_status(job_level.data_dir / 'tier/upstream.status')}")
        time.sleep(0.5)


def finish(loadgens, timeout_s=120):
    for p in loadgens:
        out, err = p.communicate(timeout=timeout_s)
        assert p.returncode == 0, f"loadgen failed ({p.returncode}):\n{out}\n{err}"


# Its old flake (1 run in ~15) was the job-level collector crashing just after
# nats-server came back: libnats 3.4's natsSubscription_Fetch overran its
# array (see tier/include/trainscope/tier/jetstream_puller.h).
def test_job_level_view_is_the_union_of_four_nodes_through_kills(tmp_path):
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    nodes = [node_collector(tmp_path / f"node{i}", nats.url, f"node.{i}").start()
             for i in range(4)]
    loadgens = []
    try:
        for i, node in enumerate(nodes):
            loadgens.append(start_loadgen(node.address, JOB, first_rank=2 * i, streams=2,
                                          world_size=8, events=6000, rate=1500,
                                          summary=tmp_path / f"loadgen{i}.json"))
        time.sleep(1.0)
        # NATS goes away mid-run and comes back on the same port and store.
        nats.kill()
        time.sleep(1.0)
        nats.start()
        time.sleep(0.5)
        # A node collector is killed mid-run and restarted on its port: its
        # ranks reconnect and resend, it catches up what it had not published.
        nodes[2].kill()
        time.sleep(0.5)
        nodes[2].start()
        finish(loadgens)
        events, steps = wait_for_union(job_level, nodes)
        assert sorted(events) == list(range(8))
        for rank in range(8):
            # Every event each rank recorded reached the job level (loadgen
            # records 6000 per stream; a starved ring may drop, counted).
            assert sum(events[rank].values()) > 5000, rank
            assert len(steps[rank]) > 50, rank
        status = job_level.status(JOB)
        assert len(status["ranks"]) == 8
        publisher = read_status(nodes[0].data_dir / "tier" / "publisher.status")
        assert int(publisher["published"]) > 0
        assert publisher["connected"] == "1"
    finally:
        for p in loadgens:
            if p.poll() is None:
                p.kill()
        for c in [*nodes, job_level]:
            c.stop()
        nats.stop()


def test_nats_unreachable_at_start_is_said_buffered_and_caught_up(tmp_path):
    port = free_port()
    node = node_collector(tmp_path / "node", f"nats://127.0.0.1:{port}", "lonely").start()
    nats = NatsServer(tmp_path / "nats", port=port)
    job_level = None
    try:
        # The node acknowledges its ranks without NATS: its log is the truth.
        finish([start_loadgen(node.address, JOB, 0, 2, 2, 3000, 0, tmp_path / "lg.json")])
        wait_for(lambda: "cannot reach NATS at nats://127.0.0.1:" + str(port) in node.output(),
                 20, "the node to say NATS is unreachable")
        assert "buffering records for the job-level collector" in node.output()
        status_file = node.data_dir / "tier" / "publisher.status"
        status = wait_for(lambda: int(read_status(status_file).get("queued", 0)) > 0
                          and read_status(status_file), 10, "publisher.status to count the buffer")
        assert status["connected"] == "0"
        assert int(status["outages"]) == 1, status
        assert int(status["published"]) == 0, status
        nats.start()
        job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
        events, _ = wait_for_union(job_level, [node])
        assert sorted(events) == [0, 1]
        assert "reachable again" in node.output()
    finally:
        node.stop()
        if job_level:
            job_level.stop()
        nats.stop()


def test_duplicate_delivery_changes_nothing_at_the_job_level(tmp_path):
    nats = NatsServer(tmp_path / "nats").start()
    # A short dedup window, so that JetStream lets the node's resend through
    # and the job-level collector is the one that must drop it.
    window = ["--nats-duplicate-window-ms=200"]
    job_level = job_level_collector(tmp_path / "job-level", nats.url,
                                    [*window, "--metrics-port=0"]).start()
    node = node_collector(tmp_path / "node", nats.url, "dup",
                          extra=[*window, "--metrics-port=0"]).start()
    try:
        finish([start_loadgen(node.address, JOB, 0, 2, 2, 3000, 0, tmp_path / "lg.json")])
        before = wait_for_union(job_level, [node])
        upstream = job_level.data_dir / "tier" / "upstream.status"
        received = int(read_status(upstream).get("received", 0))
        # The node forgets what JetStream acknowledged and publishes it all again.
        node.stop()
        (node.data_dir / "tier" / "published" / JOB).unlink()
        time.sleep(0.5)  # past the dedup window
        node.start()
        wait_for(lambda: int(read_status(upstream).get("received", 0)) >= 2 * received, 30,
                 "the job level to receive the resend")
        wait_for(lambda: int(read_status(upstream).get("duplicates", 0)) > 0, 10,
                 "duplicates to be counted")
        time.sleep(1.0)
        after = wait_for_union(job_level, [node])
        assert after == before
        # The same counters where the user looks: `trainscope status` and /metrics.
        line = wait_for(lambda: re.search(
            r"^tier job level <- nats://127\.0\.0\.1:\d+: ([\d,]+) consumed, ([\d,]+) "
            r"duplicates dropped, [\d,]+ received, lag ", job_level.cli("status", JOB).stdout,
            re.M), 10, "`trainscope status` to show the job level's tier line")
        assert int(line.group(1).replace(",", "")) > 0 and int(line.group(2).replace(",", "")) > 0
        assert "tier node" not in job_level.cli("status", JOB).stdout
        node_line = re.search(r"^tier node -> nats://127\.0\.0\.1:\d+: connected, ([\d,]+) "
                              r"buffered, ([\d,]+) published \(acknowledged\), .* ([\d,]+) "
                              r"rewinds, ", node.cli("status", JOB).stdout, re.M)
        assert node_line and int(node_line.group(2).replace(",", "")) > 0, node.cli("status", JOB)
        assert "tier node ->" in node.cli("jobs").stdout
        metrics = urllib.request.urlopen(f"http://{job_level.metrics}/metrics",
                                         timeout=10).read().decode()
        dropped = re.search(r"^trainscope_tier_duplicates_dropped_total (\S+)$", metrics, re.M)
        assert dropped and float(dropped.group(1)) > 0, metrics
        assert re.search(r"^trainscope_tier_job_level 1$", metrics, re.M)
        assert "trainscope_tier_published_records_total" not in metrics
        node_metrics = urllib.request.urlopen(f"http://{node.metrics}/metrics",
                                              timeout=10).read().decode()
        published = re.search(r"^trainscope_tier_published_records_total (\S+)$", node_metrics,
                              re.M)
        assert published and float(published.group(1)) > 0, node_metrics
        assert re.search(r"^trainscope_tier_rewinds_total \S+$", node_metrics, re.M)
    finally:
        node.stop()
        job_level.stop()
        nats.stop()


def test_a_halt_at_the_job_level_stops_the_ranks_of_every_node(tmp_path):
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    nodes = [node_collector(tmp_path / f"node{i}", nats.url, f"h{i}").start() for i in range(2)]
    loadgens = []
    try:
        for i, node in enumerate(nodes):
            loadgens.append(start_loadgen(node.address, JOB, 2 * i, 2, 4, 0, 500,
                                          tmp_path / f"lg{i}.json", run_for_ms=60000))

        def all_ranks_seen():
            r = job_level.cli("status", JOB, "--json", check=False)
            return r.returncode == 0 and len(__import__("json").loads(r.stdout)["ranks"]) == 4

        wait_for(all_ranks_seen, 30, "the job level to see the 4 ranks")
        time.sleep(1.0)  # some steps, so that the halt has a boundary
        job_level.cli("halt", JOB, "--reason", "tier test",
                      "--token-file", str(job_level.job_dir(JOB) / "token"))
        for p in loadgens:
            out, err = p.communicate(timeout=45)
            assert p.returncode == 3, f"not halted ({p.returncode}):\n{out}\n{err}"
            assert "halted" in out + err
    finally:
        for p in loadgens:
            if p.poll() is None:
                p.kill()
        for c in [*nodes, job_level]:
            c.stop()
        nats.stop()


def test_summary_publishing_sends_step_marks_and_collectives_only(tmp_path):
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    node = node_collector(tmp_path / "node", nats.url, "small",
                          extra=["--publish-events=summary"]).start()
    try:
        finish([start_loadgen(node.address, JOB, 0, 2, 2, 3000, 0, tmp_path / "lg.json")])
        kept = {STEP_MARK, COLLECTIVE, GPU_COLLECTIVE}

        def summary_arrived():
            want = [e for e in logged_events(node.job_dir(JOB)) if e[1] in kept]
            got = logged_events(job_level.job_dir(JOB))
            return want and sorted(got) == sorted(want) and (want, got)

        want, got = wait_for(summary_arrived, 60, "the job level to hold the nodes' summary")
        node_all = logged_events(node.job_dir(JOB))
        # The reduction is real: most events stay on the node.
        assert len(got) < len(node_all) / 5
        assert {e[0] for e in got} == {0, 1}
        assert any(e[1] == COLLECTIVE for e in got) and any(e[1] == STEP_MARK for e in got)
    finally:
        node.stop()
        job_level.stop()
        nats.stop()


# EC P-256 certificates (quick on a loaded machine), as tests/python/test_security.py makes them.
CERT_SCRIPT = r"""set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 2 -out "$1.pem"; }
leaf() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
ca ca; ca other-ca
leaf server ca; leaf client ca; leaf stranger other-ca
""" + EXPIRED_CERT_SCRIPT


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl (scripts/setup.sh)")
def test_nats_with_mutual_tls_refuses_a_collector_without_its_certificate(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(["sh", "-c", CERT_SCRIPT, "make-certs", str(certs)], check=True,
                   capture_output=True, timeout=60)
    c = lambda name: str(certs / name)  # noqa: E731
    nats = NatsServer(tmp_path / "nats", extra=[
        "--tls", "--tlscert", c("server.pem"), "--tlskey", c("server.key"), "--tlsverify",
        "--tlscacert", c("ca.pem")]).start()
    tls = [f"--nats-tls-ca={c('ca.pem')}", f"--nats-tls-cert={c('client.pem')}",
           f"--nats-tls-key={c('client.key')}"]
    job_level = job_level_collector(tmp_path / "job-level", nats.url, tls).start()
    node = node_collector(tmp_path / "node", nats.url, "secure", extra=tls).start()
    stranger = node_collector(tmp_path / "stranger", nats.url, "stranger", extra=[
        f"--nats-tls-ca={c('ca.pem')}", f"--nats-tls-cert={c('stranger.pem')}",
        f"--nats-tls-key={c('stranger.key')}"]).start()
    plain = node_collector(tmp_path / "plain", nats.url, "plain").start()
    try:
        finish([start_loadgen(node.address, JOB, 0, 2, 2, 2000, 0, tmp_path / "lg.json")])
        events, _ = wait_for_union(job_level, [node])
        assert sorted(events) == [0, 1]
        for refused in (stranger, plain):
            wait_for(lambda r=refused: "cannot reach NATS at " + nats.url in r.output(), 20,
                     f"{refused.work_dir.name} to say it cannot reach NATS")
            assert "may require TLS" in refused.output()
            status = read_status(refused.data_dir / "tier" / "publisher.status")
            assert status.get("connected") == "0", status
    finally:
        for x in (node, stranger, plain, job_level):
            x.stop()
        nats.stop()


def test_nats_with_a_password_refuses_a_collector_without_it(tmp_path):
    # The user and password travel in the URL (nats://USER:PASSWORD@HOST:PORT,
    # as the NATS clients take them) and are never shown: not in messages,
    # status files or `trainscope status`.
    nats = NatsServer(tmp_path / "nats", extra=["--user", "tier", "--pass", "s3cret-pw"]).start()
    with_password = f"nats://tier:s3cret-pw@127.0.0.1:{nats.port}"
    job_level = job_level_collector(tmp_path / "job-level", with_password).start()
    node = node_collector(tmp_path / "node", with_password, "authed").start()
    nobody = node_collector(tmp_path / "nobody", nats.url, "nobody").start()
    wrong = node_collector(tmp_path / "wrong", f"nats://tier:guess@127.0.0.1:{nats.port}",
                           "wrong").start()
    try:
        finish([start_loadgen(node.address, JOB, 0, 2, 2, 2000, 0, tmp_path / "lg.json")])
        events, _ = wait_for_union(job_level, [node])
        assert sorted(events) == [0, 1]
        refused = f"NATS at {nats.url} refused this client (Authentication Violation"
        for collector, why in ((nobody, "it requires credentials and none were given"),
                               (wrong, "the user or token in the URL was not accepted")):
            wait_for(lambda c=collector: refused in c.output(), 20,
                     f"{collector.work_dir.name} to say NATS refused it")
            assert why in collector.output(), collector.output()
            assert "nats://USER:PASSWORD@HOST:PORT" in collector.output()
            assert "cannot reach" not in collector.output()
            status = read_status(collector.data_dir / "tier" / "publisher.status")
            assert status.get("connected") == "0", status
            assert int(status.get("published", 0)) == 0, status
        assert f"publishing to NATS at {nats.url} as node authed" in node.output()
        assert read_status(node.data_dir / "tier" / "publisher.status")["url"] == nats.url
        assert f"tier node -> {nats.url}: connected" in node.cli("status", JOB).stdout
        for c in (job_level, node, nobody, wrong):
            assert "s3cret" not in c.output() and "guess" not in c.output(), c.output()
    finally:
        for c in (node, nobody, wrong, job_level):
            c.stop()
        nats.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl (scripts/setup.sh)")
def test_an_expired_nats_client_certificate_is_named_with_its_date(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(["sh", "-c", CERT_SCRIPT, "make-certs", str(certs)], check=True,
                   capture_output=True, timeout=60)
    c = lambda name: str(certs / name)  # noqa: E731
    tls = [f"--nats-tls-ca={c('ca.pem')}", f"--nats-tls-cert={c('expired.pem')}",
           f"--nats-tls-key={c('expired.key')}"]
    # Signed by the server's CA, so only its dates are wrong; refused before
    # any connection (the server would only close it: "cannot reach NATS").
    for role in ("--publish", "--upstream"):
        work = tmp_path / role.strip("-")
        work.mkdir()
        r = subprocess.run([str(COLLECTOR_BIN), f"--data-dir={work}", "--listen=127.0.0.1:0",
                            "--feed=tcp://127.0.0.1:*", "--snapshot=tcp://127.0.0.1:*",
                            f"{role}=nats://127.0.0.1:{free_port()}", *tls],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0, r.stdout
        assert f"--nats-tls-cert: the certificate in '{c('expired.pem')}' (/CN=expired) expired " \
               "on Jan  2 00:00:00 2020 GMT; expected one valid now: renew it" in r.stderr, r.stderr


def test_clock_domains_that_differ_per_host_are_aligned_at_the_job_level(tmp_path):
    # Node 1's ranks run on "a host whose clock is 250 ms ahead" (the agents
    # shift every timestamp they send); the job level never sees the node
    # collectors' probes, only the records, so the collectives align them.
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    nodes = [node_collector(tmp_path / f"node{i}", nats.url, f"clock.{i}").start()
             for i in range(2)]
    try:
        finish([start_loadgen(node.address, JOB, first_rank=2 * i, streams=2, world_size=4,
                              events=4000, rate=1500, summary=tmp_path / f"lg{i}.json",
                              clock_offset_ms=250 * i) for i, node in enumerate(nodes)])
        wait_for_union(job_level, nodes)

        def estimates():
            r = job_level.cli("clocks", JOB, "--json", "--snapshot", job_level.snapshot,
                              check=False)
            if r.returncode != 0:
                return None
            devices = {d["rank"]: d for d in json.loads(r.stdout)["devices"]}
            return devices if sorted(devices) == [0, 1, 2, 3] and all(
                not d.get("insufficient_evidence") for d in devices.values()) else None
        devices = wait_for(estimates, 30, "clock estimates for the four ranks")
        assert "+test:250000000" in devices[2]["clock_domain"]
        assert devices[0]["clock_domain"] == devices[1]["clock_domain"]
        assert "+test" not in devices[0]["clock_domain"]
        assert devices[2]["source"] == "CLOCK_SOURCE_COLLECTIVES", devices[2]
        assert devices[3]["source"] == "CLOCK_SOURCE_CLOCK_DOMAIN", devices[3]
        for rank in (2, 3):
            # Reference minus device: about -250 ms; the margin is the two
            # loadgens' start lag (their steps are paced from their own start).
            offset_ms = int(devices[rank].get("offset_to_reference_device_ns", 0)) / 1e6
            assert -450 < offset_ms < -50, devices[rank]
        for rank in (0, 1):
            assert int(devices[rank].get("offset_to_reference_device_ns", 0)) == 0, devices[rank]
    finally:
        for c in [*nodes, job_level]:
            c.stop()
        nats.stop()


def test_bad_tier_flags_are_named(tmp_path):
    for args, expected in (
            (["--publish=http://x:1"], "--publish: 'http://x:1' is not a NATS URL"),
            (["--publish=nats://127.0.0.1:1", "--publish-events=some"], "--publish-events: 'some'"),
            (["--publish=nats://127.0.0.1:1", "--node-name=a b"], "--node-name: 'a b'"),
            (["--publish=nats://127.0.0.1:1", "--nats-tls-cert=/nonexistent.pem",
              "--nats-tls-key=/nonexistent.key"], "--nats-tls-cert: cannot read '/nonexistent.pem'"),
    ):
        r = subprocess.run([str(COLLECTOR_BIN), f"--data-dir={tmp_path / 'd'}",
                            "--listen=127.0.0.1:0", "--feed=tcp://127.0.0.1:*",
                            "--snapshot=tcp://127.0.0.1:*", *args],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, args
        assert expected in r.stderr, (args, r.stderr)


def test_a_rank_that_moves_to_another_node_keeps_one_history(tmp_path):
    # An elastic restart puts rank 0 on another host: its new incarnation
    # arrives from another node collector, the job level keeps both.
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    first, second = (node_collector(tmp_path / n, nats.url, n).start() for n in ("a", "b"))
    try:
        finish([start_loadgen(first.address, JOB, 0, 2, 2, 2000, 0, tmp_path / "lg1.json")])
        finish([start_loadgen(second.address, JOB, 0, 1, 2, 2000, 0, tmp_path / "lg2.json",
                              restart_count=1)])
        events, _ = wait_for_union(job_level, [first, second])
        moved = [e for e in logged_events(second.job_dir(JOB))]
        assert moved and {e[0] for e in moved} == {0}
        stayed = [e for e in logged_events(first.job_dir(JOB)) if e[0] == 0]
        assert sum(events[0].values()) == len(moved) + len(stayed)
    finally:
        for c in (first, second, job_level):
            c.stop()
        nats.stop()


def test_a_node_whose_ranks_arrive_after_the_halt_still_halts_them(tmp_path):
    """Commands are per-job state, not one-shot messages: node h2 is up before the
    halt but gets its rank after it (held, run when the rank arrives); node h3
    starts after the halt (its consumer starts with the last command per job)."""
    nats = NatsServer(tmp_path / "nats").start()
    job_level = job_level_collector(tmp_path / "job-level", nats.url).start()
    nodes = [node_collector(tmp_path / f"node{i}", nats.url, f"h{i}").start() for i in range(3)]
    loadgens = []
    try:
        for i in range(2):
            loadgens.append(start_loadgen(nodes[i].address, JOB, 2 * i, 2, 6, 0, 500,
                                          tmp_path / f"lg{i}.json", run_for_ms=60000))

        def ranks_seen(n):
            r = job_level.cli("status", JOB, "--json", check=False)
            return r.returncode == 0 and len(__import__("json").loads(r.stdout)["ranks"]) >= n

        wait_for(lambda: ranks_seen(4), 30, "the job level to see the 4 first ranks")
        time.sleep(1.0)
        job_level.cli("halt", JOB, "--reason", "tier test",
                      "--token-file", str(job_level.job_dir(JOB) / "token"))
        for p in loadgens:
            out, err = p.communicate(timeout=45)
            assert p.returncode == 3, f"not halted ({p.returncode}):\n{out}\n{err}"
        # The halt has gone down; now the late ranks come.
        nodes.append(node_collector(tmp_path / "node3", nats.url, "h3").start())
        late = [start_loadgen(nodes[2].address, JOB, 4, 1, 6, 0, 500, tmp_path / "lg4.json",
                              run_for_ms=60000),
                start_loadgen(nodes[3].address, JOB, 5, 1, 6, 0, 500, tmp_path / "lg5.json",
                              run_for_ms=60000)]
        loadgens += late
        for p, node in zip(late, nodes[2:]):
            out, err = p.communicate(timeout=50)
            assert p.returncode == 3, (f"a rank that joined after the halt was not halted "
                                       f"({p.returncode}):\n{out}\n{err}\nnode:\n"
                                       f"{node.output()[-2000:]}")
            assert "halted" in out + err
    finally:
        for p in loadgens:
            if p.poll() is None:
                p.kill()
        for c in [*nodes, job_level]:
            c.stop()
        nats.stop()
