"""Scenario "cost": dollars per GB from the requests a Lakestream broker makes.

One durable Lakestream broker (object.store.fsync=true, a table on the topic; on a
local directory, so the bytes stored can be counted, with S3's WAL cadence:
wal.flush.min.interval.ms=200, what -1 means on s3://) is measured in two phases, its /metrics scraped before and after each:

  ingest   ProducerPerformance with 256 KiB batches (perftools.TUNED_PROPS: with the Java
           defaults' 16 KiB batches and 5 requests in flight, one producer gets about
           3 MB/s through S3's 200 ms WAL cadence) writes --cost-records
           records of --cost-size bytes at --cost-rate records/s to 8 partitions; the
           phase ends once the table holds every record and compaction has nothing due,
           so it carries the WAL PUTs, the compaction pass and the table commits.
  read     ConsumerPerformance reads the topic back from the start (a catch-up read).

From the object-store calls by operation (lakestream_object_store_operation_duration_
seconds_count: a call's retries are inside one call, so these are lower bounds of HTTP
requests), the metadata-store operations and the bytes under the object store at the end
of ingest, it reports requests and bytes stored per GB ingested and per GB read, then
dollars with the list prices of bench/prices.json:

  Lakestream on S3 Standard and on S3 Express One Zone: requests + storage; no inter-AZ
  bytes (clients reach a broker of their own zone through the zone-aware routing, and
  S3 to EC2 in one region is free);
  Apache Kafka across 3 zones, RF=3, acks=all: inter-AZ bytes (a producer reaches a
  leader in another zone 2/3 of the time, each record is replicated to two other zones,
  a consumer fetches from another zone 2/3 of the time without follower fetching) and
  storage of three replicas on gp3 kept at most --cost-disk-fill full.

Compute is left out of both (brokers of either sized alike by throughput); the report
says so. Each figure is printed beside the assumption it rests on; --cost-mb-s and
--cost-retention-days (lists) set the monthly rows, which include the 5 GB/s workload of
StreamNative's Ursa paper (VLDB 2025) recomputed from these per-GB figures.
"""
import json
import os
import time

import bench
import perftools

FAMILY = ["cost"]
PRICES = os.path.join(bench.ROOT, "bench", "prices.json")
GB = 1e9
MONTH_S = 30 * 86400
# S3's billing classes of our object-store operations (objstore.c's op names)
PUT_CLASS = ("put", "list", "copy")
GET_CLASS = ("get", "head")
def by_label(m, name):
    """{label value: value} of a metric with one label."""
    return {labels.split('"')[1]: v for (n, labels), v in m.items() if n == name and labels}


def delta(m0, m1, name):
    a, b = by_label(m0, name), by_label(m1, name)
    return {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}


def settled(m):
    lag = sum(v for (n, _), v in m.items() if n == "lakestream_table_lag_records")
    backlog = m.get(("lakestream_compaction_backlog_seconds", ""), 0)
    rows = sum(v for (n, _), v in m.items() if n == "lakestream_table_rows")
    return lag == 0 and backlog == 0 and rows > 0


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def measure(a):
    """Runs both phases on one broker start; returns the measured figures."""
    # on a local directory for its byte count, with the WAL cadence of s3:// (the
    # -1 default of wal.flush.min.interval.ms is 0 on a directory, 200 ms on S3)
    broker = bench.Broker("lakestream", "lakestream",
                          {"object.store.fsync": "true", "wal.flush.min.interval.ms": "200"},
                          rest=True)
    broker.start()
    try:
        boot, cfg = perftools.client_config(broker, "plain")
        topic = "cost-1"
        # kafka-topics refuses config names it does not know before sending them
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic(topic, perftools.PARTITIONS, 1,
                                      config={"lakestream.table.enabled": "true"})])[topic].result(60)
        m0 = bench.scrape_metrics(broker)
        t0 = time.time()
        prod = perftools.produce(boot, cfg, topic, a.cost_records, a.cost_size,
                                 perftools.TUNED_PROPS, throughput=a.cost_rate)
        bench.wait_for("the table to hold every record and compaction to finish",
                       lambda: settled(bench.scrape_metrics(broker)), 900, 0.5)
        ingest_s = time.time() - t0
        m1 = bench.scrape_metrics(broker)
        stored = dir_bytes(os.path.join(broker.dir, "data", "objects"))
        cons = perftools.consume(boot, cfg, topic, a.cost_records)
        m2 = bench.scrape_metrics(broker)
    finally:
        broker.stop()
    gb = a.cost_records * a.cost_size / GB
    meta = "lakestream_metadata_store_operation_duration_seconds_count"
    objs = "lakestream_object_store_operation_duration_seconds_count"
    return {"records": a.cost_records, "record_bytes": a.cost_size, "gb": gb,
            "produce": prod, "consume": cons, "ingest_seconds": round(ingest_s, 1),
            "ingest_object_calls": delta(m0, m1, objs), "read_object_calls": delta(m1, m2, objs),
            "ingest_metadata_ops": delta(m0, m1, meta), "read_metadata_ops": delta(m1, m2, meta),
            "stored_bytes_after_ingest": stored}


def per_gb(calls, gb):
    put = sum(v for k, v in calls.items() if k in PUT_CLASS)
    get = sum(v for k, v in calls.items() if k in GET_CLASS)
    return put / gb, get / gb


def monthly(m, prices, mb_s, days, fanout, disk_fill):
    """Dollars per month at mb_s MB/s ingested, days of retention, each byte read fanout
    times; one dict per system."""
    gb_month = mb_s * MONTH_S / 1e3
    retained = mb_s * 86400 * days / 1e3  # GB held at steady state (one copy)
    in_put, in_get = per_gb(m["ingest_object_calls"], m["gb"])
    rd_put, rd_get = per_gb(m["read_object_calls"], m["gb"])
    amp = m["stored_bytes_after_ingest"] / (m["gb"] * GB)
    out = {}
    for name, key in (("Lakestream, S3 Standard", "s3_standard"),
                      ("Lakestream, S3 Express One Zone", "s3_express_one_zone")):
        p = prices[key]
        req = ((in_put + rd_put * fanout) * gb_month * p["put_class_per_1000"] / 1000 +
               (in_get + rd_get * fanout) * gb_month * p["get_class_per_1000"] / 1000)
        xfer = (gb_month * amp * p.get("upload_per_gb", 0) +
                gb_month * fanout * p.get("retrieval_per_gb", 0))
        store = retained * amp * p["storage_gb_month"]
        out[name] = {"requests": req, "transfer": xfer, "storage": store, "inter_az": 0.0}
    cross = gb_month * (2 / 3 + 2 + fanout * 2 / 3)
    out["Kafka, 3 AZ, RF=3, gp3"] = {
        "requests": 0.0, "transfer": 0.0, "inter_az": cross * prices["inter_az_per_gb"],
        "storage": 3 * retained / disk_fill * prices["ebs_gp3_gb_month"]}
    for v in out.values():
        v["total"] = sum(v.values())
    return out


def markdown(m, prices, a):
    gb = m["gb"]
    in_put, in_get = per_gb(m["ingest_object_calls"], gb)
    rd_put, rd_get = per_gb(m["read_object_calls"], gb)
    amp = m["stored_bytes_after_ingest"] / (gb * GB)
    L = ["## Cost from measured requests (`cost`, bench/cost.py)", "",
         "Measured on one durable Lakestream broker (a local directory with S3's WAL "
         "cadence, `wal.flush.min.interval.ms=200`): "
         f"{m['records']:,} × {m['record_bytes']} B "
         f"= {gb:.3f} GB produced with ProducerPerformance (batch.size 256 KiB, linger 5 ms, 8 partitions, "
         f"table on) at {m['produce']['mb_per_s']:.1f} MB/s (`--cost-rate` "
         f"{a.cost_rate:,} records/s), {m['ingest_seconds']} s until the table held every "
         "record and compaction had nothing due; then read back once from the start.", "",
         "Requests per GB depend on each broker's rate: a WAL object is sealed by time as "
         "well as by size, so a broker taking more bytes per second writes fewer, larger "
         "objects. The monthly rows assume every broker runs at this run's rate (so many "
         "brokers for 5 GB/s); brokers run faster need fewer PUTs per GB, so for them the "
         "request figures are an upper bound.", "",
         "| phase | object-store calls (by operation) | PUT-class / GB | GET-class / GB "
         "| metadata-store ops / GB |", "|---|---|---|---|---|",
         f"| ingest (WAL, compaction, table) | {fmt_calls(m['ingest_object_calls'])} "
         f"| {in_put:,.0f} | {in_get:,.0f} | {sum(m['ingest_metadata_ops'].values()) / gb:,.0f} |",
         f"| catch-up read | {fmt_calls(m['read_object_calls'])} | {rd_put:,.0f} | {rd_get:,.0f} "
         f"| {sum(m['read_metadata_ops'].values()) / gb:,.0f} |", "",
         f"Bytes under the object store after ingest: {amp:.2f} per byte produced (log and "
         "table together; WAL objects not yet collected count too, so an upper bound).", "",
         f"Prices: bench/prices.json ({prices['region']}, list prices as of {prices['date']}). "
         "Compute is not in these figures (brokers of either system sized alike). "
         "Kafka: producers reach a leader in another zone 2/3 of the time, every record is "
         "replicated to two other zones, consumers fetch across zones 2/3 of the time; three "
         f"replicas on gp3 kept at most {a.cost_disk_fill:.0%} full. Lakestream: clients "
         "served in their own zone (zone-aware routing), S3 to EC2 in-region free; S3 "
         "Express assumes brokers in the bucket's zone. Each byte read once "
         f"(fan-out {a.cost_fanout:g}).", "",
         "| MB/s ingested | retention | system | requests | S3 transfer | inter-AZ | storage "
         "| **total $/month** | $/GB ingested |", "|---|---|---|---|---|---|---|---|---|"]
    for mb_s in a.cost_mb_s:
        for days in a.cost_retention_days:
            rows = monthly(m, prices, mb_s, days, a.cost_fanout, a.cost_disk_fill)
            gb_month = mb_s * MONTH_S / 1e3
            for name, v in rows.items():
                L.append(f"| {mb_s:g} | {days:g} d | {name} | {v['requests']:,.0f} "
                         f"| {v['transfer']:,.0f} | {v['inter_az']:,.0f} | {v['storage']:,.0f} "
                         f"| **{v['total']:,.0f}** | {v['total'] / gb_month:.4f} |")
    L += ["", "5000 MB/s is the workload of the Ursa paper (StreamNative, VLDB 2025): its "
          "rows here are recomputed from this run's per-GB figures and the prices above, "
          "not copied from the paper.", ""]
    return "\n".join(L) + "\n"


def fmt_calls(calls):
    return ", ".join(f"{k} {v:,.0f}" for k, v in sorted(calls.items())) or "none"


def run(scenarios, a, stamp, facts, cmdline, failures, loads):
    """Measures, writes <stamp>-cost.json and returns the report's markdown section."""
    with open(PRICES) as f:
        prices = json.load(f)
    bench.settle()
    loads.append(bench.loadavg())
    try:
        m = measure(a)
    except Exception as e:  # noqa: BLE001 (reported, the rest of the run goes on)
        bench.log(f"cost FAILED: {e}")
        failures.append(f"cost: {str(e).splitlines()[0][:300]}")
        return "## Cost from measured requests\n\nFailed: see the log.\n"
    res = {"scenario": "cost", "command": cmdline, "machine": facts, "prices": prices,
           "measured": m,
           "monthly": {f"{mb}MB/s-{d}d": monthly(m, prices, mb, d, a.cost_fanout,
                                                  a.cost_disk_fill)
                       for mb in a.cost_mb_s for d in a.cost_retention_days}}
    with open(os.path.join(a.out, f"{stamp}-cost.json"), "w") as f:
        json.dump(res, f, indent=1)
    return markdown(m, prices, a)
