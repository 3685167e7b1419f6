"""Scenario family "perf-tools": Kafka's own perf tools against both brokers.

Users measure a Kafka-compatible broker with org.apache.kafka.tools.ProducerPerformance
and ConsumerPerformance (the classes behind kafka-producer-perf-test.sh and
kafka-consumer-perf-test.sh), so this family runs exactly those, from the Kafka tools
jars in .cache/java/tools, against Lakestream and the Apache Kafka peer in the same run,
interleaved (Lakestream, Kafka, Lakestream, Kafka... over --repeat), and reports the
median of each case side by side with the ratio Lakestream / Kafka.

  perf-tools      plaintext: produce 100 B and 1 KiB records to 8 partitions with the
                  Java producer's defaults (idempotent, acks=all, 5 in flight, linger
                  5 ms, batch 16 KiB) and with the driver's tuned batch (256 KiB,
                  idempotence off as in bench/driver); consume each default-produced
                  topic back with ConsumerPerformance.
  perf-tools-tls  the 1 KiB cases again over an SSL listener of the same broker
                  start (a throwaway CA made with openssl), so the cost of TLS is a
                  ratio per broker.
  perf-tools-sasl the same over a SASL_SSL listener, SCRAM-SHA-512 (bench.SCRAM_USER).
  perf-tools-groups
                  the default-produced topics read back by the newer group kinds:
                  ConsumerPerformance with group.protocol=consumer (KIP-848) and
                  ShareConsumerPerformance (a share group, KIP-932, whose
                  share.auto.offset.reset is set to earliest first with kafka-configs).

Counts: --perf-records / BENCH_PERF_RECORDS (1 KiB records, default 200000) and
--perf-small-records / BENCH_PERF_SMALL_RECORDS (100 B records, default 1000000).
Each case is one tool process; its summary line is parsed into the JSON report.
"""
import json
import os
import re
import statistics
import subprocess

import bench

TOOLS = os.path.join(bench.ROOT, ".cache", "java", "tools")
FAMILY = ["perf-tools", "perf-tools-tls", "perf-tools-sasl", "perf-tools-groups"]
# Transports: case-name suffix, and the scenario that selects it.
SUFFIX = {"plain": "", "tls": "-tls", "sasl": "-sasl_ssl"}
SCENARIO = {"plain": "perf-tools", "tls": "perf-tools-tls", "sasl": "perf-tools-sasl"}
PARTITIONS = 8
# The Java producer's defaults: nothing but the bootstrap address.
DEFAULT_PROPS = []
# bench/driver's produce settings (librdkafka: acks=all, linger 5 ms, idempotence off)
# with the Java client's batch raised to 256 KiB.
TUNED_PROPS = ["acks=all", "linger.ms=5", "batch.size=262144", "enable.idempotence=false"]

# ProducerPerformance's last line: "N records sent, R records/sec (M MB/sec), A ms avg
# latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
PRODUCE_RE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


# The Kafka targets a run may measure beside Lakestream, with their jars.
KAFKAS = {"kafka": bench.KAFKA_LIBS, "kafka-4.4": bench.KAFKA44_LIBS}


def tools_version():
    jars = [j for j in os.listdir(TOOLS) if re.match(r"kafka-tools-\d", j)]
    return jars[0][len("kafka-tools-"):-4] if jars else "?"


def java(cls, args, timeout):
    cmd = ["java", "-Xmx512m", "-cp", os.path.join(TOOLS, "*"), cls] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{cls} exited {p.returncode}: {(p.stderr or p.stdout)[-800:]}")
    return p.stdout


def client_config(broker, transport):
    """The tools' client properties for a transport: TLS trusting the throwaway CA,
    SASL_SSL adding the SCRAM user, plaintext empty. Returns (bootstrap, file)."""
    path = os.path.join(broker.dir, f"client-{transport}.properties")
    with open(path, "w") as f:
        if transport != "plain":
            f.write(f"ssl.truststore.type=PEM\nssl.truststore.location={broker.ssl['ca']}\n")
        if transport == "tls":
            f.write("security.protocol=SSL\n")
        if transport == "sasl":
            user, password = bench.SCRAM_USER
            f.write("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="{user}" password="{password}";\n')
    bootstrap = {"plain": broker.bootstrap, "tls": broker.ssl_bootstrap,
                 "sasl": broker.sasl_bootstrap}[transport]
    return bootstrap, path


def create_topic(bootstrap, cfg, topic):
    java("org.apache.kafka.tools.TopicCommand",
         ["--bootstrap-server", bootstrap, "--command-config", cfg, "--create", "--topic", topic,
          "--partitions", str(PARTITIONS), "--replication-factor", "1"], 120)


def produce(bootstrap, cfg, topic, n, size, props, throughput=-1):
    out = java("org.apache.kafka.tools.ProducerPerformance",
               ["--topic", topic, "--num-records", str(n), "--record-size", str(size),
                "--throughput", str(throughput), "--producer.config", cfg,
                "--producer-props", f"bootstrap.servers={bootstrap}"] + props, 1800)
    m = None
    for m in PRODUCE_RE.finditer(out):
        pass  # the last match is the summary; the others are 5-second progress lines
    if not m:
        raise RuntimeError(f"no ProducerPerformance summary in: {out[-500:]}")
    return {"records": int(m.group(1)), "records_per_s": float(m.group(2)),
            "mb_per_s": float(m.group(3)), "avg_ms": float(m.group(4)),
            "max_ms": float(m.group(5)), "p50_ms": int(m.group(6)), "p95_ms": int(m.group(7)),
            "p99_ms": int(m.group(8))}


def consume(bootstrap, cfg, topic, n):
    out = java("org.apache.kafka.tools.ConsumerPerformance",
               ["--topic", topic, "--messages", str(n), "--bootstrap-server", bootstrap,
                "--command-config", cfg, "--timeout", "60000"], 1800)
    # A CSV header (start.time, end.time, data.consumed.in.MB, MB.sec, ...) then one row.
    lines = [ln for ln in out.splitlines() if ln.count(",") >= 5]
    if len(lines) < 2:
        raise RuntimeError(f"no ConsumerPerformance summary in: {out[-500:]}")
    row = dict(zip([h.strip() for h in lines[-2].split(",")],
                   [v.strip() for v in lines[-1].split(",")]))
    got = int(float(row["data.consumed.in.nMsg"]))
    if got < n:
        raise RuntimeError(f"ConsumerPerformance read {got} of {n} records")
    return {"records": got, "mb_per_s": float(row["MB.sec"]),
            "records_per_s": float(row["nMsg.sec"]),
            "fetch_mb_per_s": float(row["fetch.MB.sec"]),
            "fetch_records_per_s": float(row["fetch.nMsg.sec"])}


def share_consume(bootstrap, cfg, topic, n, group):
    """A share group of one ShareConsumerPerformance member reads n records of
    topic from its start (the group's share.auto.offset.reset set to earliest
    with kafka-configs first: a share group starts at the end by default)."""
    java("org.apache.kafka.tools.ConfigCommand",
         ["--bootstrap-server", bootstrap, "--command-config", cfg, "--alter", "--entity-type",
          "groups", "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest"],
         120)
    out = java("org.apache.kafka.tools.ShareConsumerPerformance",
               ["--topic", topic, "--num-records", str(n), "--bootstrap-server", bootstrap,
                "--command-config", cfg, "--group", group, "--timeout", "60000"], 1800)
    lines = [ln for ln in out.splitlines() if ln.count(",") >= 4]
    head = next((i for i, ln in enumerate(lines) if "data.consumed.in.nMsg" in ln), None)
    if head is None or head + 1 >= len(lines):
        raise RuntimeError(f"no ShareConsumerPerformance summary in: {out[-500:]}")
    row = dict(zip([h.strip() for h in lines[head].split(",")],
                   [v.strip() for v in lines[head + 1].split(",")]))
    got = int(float(row["data.consumed.in.nMsg"]))
    if got < n:
        raise RuntimeError(f"ShareConsumerPerformance read {got} of {n} records")
    return {"records": got, "mb_per_s": float(row["MB.sec"]),
            "records_per_s": float(row["nMsg.sec"])}


def with_props(cfg, props, suffix):
    """A copy of the client properties file cfg with props appended."""
    path = cfg[:-len(".properties")] + f"-{suffix}.properties"
    with open(cfg) as src, open(path, "w") as f:
        f.write(src.read() + "".join(f"{p}\n" for p in props))
    return path


def cases(scenarios, a):
    """(case name, scenario, transport, kind, size, count, props) in run order."""
    big, small = a.perf_records, a.perf_small_records
    out = []
    if "perf-tools" in scenarios:
        for size, n in ((100, small), (1024, big)):
            out += [(f"produce-default-{size}B", "perf-tools", "plain", "produce", size, n,
                     DEFAULT_PROPS),
                    (f"produce-tuned-{size}B", "perf-tools", "plain", "produce", size, n,
                     TUNED_PROPS),
                    (f"consume-{size}B", "perf-tools", "plain", "consume", size, n, None)]
    if "perf-tools-groups" in scenarios:
        for size, n in ((100, small), (1024, big)):
            if "perf-tools" not in scenarios:  # the topic the group cases read
                out.append((f"produce-default-{size}B", "perf-tools-groups", "plain", "produce",
                            size, n, DEFAULT_PROPS))
            out += [(f"consume-848-{size}B", "perf-tools-groups", "plain", "consume848", size, n,
                     None),
                    (f"share-consume-{size}B", "perf-tools-groups", "plain", "share", size, n,
                     None)]
    for tr in ("tls", "sasl"):
        sc, sfx = SCENARIO[tr], SUFFIX[tr]
        if sc in scenarios:
            out += [(f"produce-default-1024B{sfx}", sc, tr, "produce", 1024, big, DEFAULT_PROPS),
                    (f"produce-tuned-1024B{sfx}", sc, tr, "produce", 1024, big, TUNED_PROPS),
                    (f"consume-1024B{sfx}", sc, tr, "consume", 1024, big, None)]
    return out


def run_broker(broker, plan, rep, raw, failures, loads):
    """Every case on one start of the broker; a consume case reads the topic the
    default-settings produce case of the same size and transport wrote."""
    broker.start()
    try:
        for name, _, transport, kind, size, n, props in plan:
            bootstrap, cfg = client_config(broker, transport)
            topic = f"perf-{size}B{SUFFIX[transport]}-{rep}" if kind != "produce" or not props \
                else f"perf-{name}-{rep}"
            bench.settle()
            la = bench.loadavg()
            loads.append(la)
            bench.log(f"rep {rep + 1} {broker.name} perf {name} (load {la:.2f})")
            try:
                if kind == "produce":
                    create_topic(bootstrap, cfg, topic)
                    r = produce(bootstrap, cfg, topic, n, size, props)
                elif kind == "consume848":
                    r = consume(bootstrap, with_props(cfg, ["group.protocol=consumer"], "848"),
                                topic, n)
                elif kind == "share":
                    r = share_consume(bootstrap, cfg, topic, n, f"perf-share-{name}-{rep}")
                else:
                    r = consume(bootstrap, cfg, topic, n)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                bench.log(f"rep {rep + 1} {broker.name} perf {name} FAILED: {e}")
                failures.append(f"rep {rep + 1} {broker.name} {name}: "
                                f"{str(e).splitlines()[0][:300]}")
                continue
            r["loadavg_before"] = la
            raw.setdefault(name, {}).setdefault(broker.name, []).append(r)
    finally:
        broker.stop()


def median(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def summarize(raw, plan):
    out = {}
    for name, sc, transport, kind, size, n, props in plan:
        row = {"scenario": sc, "kind": kind, "record_bytes": size, "records": n,
               "transport": transport, "producer_props": props, "targets": {}}
        for target, runs in raw.get(name, {}).items():
            keys = ["mb_per_s", "records_per_s"] + (
                ["p50_ms", "p99_ms"] if kind == "produce" else
                [] if kind == "share" else ["fetch_mb_per_s", "fetch_records_per_s"])
            row["targets"][target] = {"median": {k: median(runs, k) for k in keys},
                                      "runs": runs}
        t = row["targets"]
        for k in KAFKAS:  # Lakestream over each Kafka peer of the run
            if "lakestream" in t and k in t and t[k]["median"]["mb_per_s"]:
                row.setdefault("ratios_mb_per_s", {})[k] = round(
                    t["lakestream"]["median"]["mb_per_s"] / t[k]["median"]["mb_per_s"], 2)
        if "kafka" in row.get("ratios_mb_per_s", {}):
            row["ratio_mb_per_s"] = row["ratios_mb_per_s"]["kafka"]
        out[name] = row
    # TLS cost: each broker's TLS (SASL_SSL) median over its own plaintext median.
    for name, row in out.items():
        sfx = SUFFIX[row["transport"]]
        plain = out.get(name[:-len(sfx)]) if sfx else None
        if not plain:
            continue
        for target, tr in row["targets"].items():
            p = plain["targets"].get(target, {}).get("median", {}).get("mb_per_s")
            if p and tr["median"]["mb_per_s"]:
                tr["secure_over_plaintext"] = round(tr["median"]["mb_per_s"] / p, 2)
    return out


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.2f}"


def markdown(summary, repeat, facts=None):
    kafkas = [k for k in KAFKAS if any(k in r["targets"] for r in summary.values())]
    names = {k: "Kafka " + (facts or {}).get(k, "?") for k in kafkas}
    lines = [f"## Kafka's perf tools (ProducerPerformance / ConsumerPerformance "
             f"{tools_version()}), median of {repeat}",
             "",
             "| case | records | Lakestream MB/s (rec/s) | "
             + "".join(f"{names[k]} MB/s (rec/s) | " for k in kafkas)
             + "".join(f"ratio MB/s vs {names[k]} | " for k in kafkas)
             + "TLS or SASL_SSL / plaintext (LS, " + ", ".join(names[k] for k in kafkas)
             + ") | p50 / p99 ms (LS; " + "; ".join(names[k] for k in kafkas) + ") |",
             "|---|---|---|" + "---|" * (2 * len(kafkas)) + "---|---|"]
    for name, row in summary.items():
        t = row["targets"]

        def cell(target, k="mb_per_s", rk="records_per_s"):
            m = t.get(target, {}).get("median")
            return f"{fmt(m[k])} ({fmt(m[rk])})" if m else "-"
        tls = ""
        if row["transport"] != "plain":
            tls = ", ".join(fmt(t.get(x, {}).get("secure_over_plaintext"))
                            for x in ["lakestream"] + kafkas)
        lat = ""
        if row["kind"] == "produce":
            lat = "; ".join(
                f"{fmt(t[x]['median']['p50_ms'])} / {fmt(t[x]['median']['p99_ms'])}"
                for x in ["lakestream"] + kafkas if x in t)
        ratios = row.get("ratios_mb_per_s", {})
        lines.append(f"| {name} | {row['records']:,} | {cell('lakestream')} | "
                     + "".join(f"{cell(k)} | " for k in kafkas)
                     + "".join(f"{fmt(ratios.get(k))} | " for k in kafkas)
                     + f"{tls} | {lat} |")
    lines += ["",
              "Produce: ProducerPerformance `--throughput -1` to 8 partitions; *default* = the "
              "Java producer's defaults (idempotent, acks=all, 5 in flight, linger 5 ms, "
              "batch 16 KiB), *tuned* = " + " ".join(TUNED_PROPS) + ". Consume: "
              "ConsumerPerformance reading the default-produced topic back (MB/s over the "
              "whole run, including the group join); *consume-848* the same with "
              "group.protocol=consumer, *share-consume* ShareConsumerPerformance (one member of "
              "a share group, implicit acknowledgement, from the earliest offset). "
              "Ratio = Lakestream / Kafka. Each case is a "
              "fresh tool JVM; the brokers get no warm-up here."]
    return "\n".join(lines) + "\n"


def run(scenarios, a, stamp, facts, cmdline, failures, loads):
    """Runs the family's selected scenarios; writes <stamp>-perf-tools.json and
    returns its markdown section. Appends failed runs to failures and the load
    average before each case to loads (the summary's header reports both)."""
    plan = cases(scenarios, a)
    secure = any(c[2] != "plain" for c in plan)
    sasl = any(c[2] == "sasl" for c in plan)
    pki = dict(bench.make_pki(), scram=sasl) if secure else None
    brokers = []
    for t in a.targets.split(","):
        if t == "lakestream":
            brokers.append(bench.Broker(t, "lakestream", {"object.store.fsync": "true"},
                                        ssl=pki))
        elif t in KAFKAS:
            brokers.append(bench.Broker(t, "kafka", ssl=pki, libs=KAFKAS[t]))
    brokers.sort(key=lambda b: b.kind != "lakestream")  # Lakestream, Kafka, Lakestream...
    raw = {}
    try:
        for rep in range(a.repeat):
            for b in brokers:
                run_broker(b, plan, rep, raw, failures, loads)
    except KeyboardInterrupt:
        bench.log("interrupted: writing what was measured")
    finally:
        for b in brokers:
            b.stop()
        if pki:
            bench.shutil.rmtree(pki["dir"], ignore_errors=True)
    summary = summarize(raw, plan)
    facts = dict(facts, kafka_tools=tools_version())
    with open(os.path.join(a.out, f"{stamp}-perf-tools.json"), "w") as f:
        json.dump({"scenarios": [s for s in FAMILY if s in scenarios], "command": cmdline,
                   "machine": facts, "repeat": a.repeat, "cases": summary,
                   "failed_runs": failures}, f, indent=1)
    return markdown(summary, a.repeat, facts)
