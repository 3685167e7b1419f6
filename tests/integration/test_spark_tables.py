"""Spark with Apache Iceberg's runtime reads the tables (issue 35): an upsert
table written merge-on-read (position delete files, folded and merged by the
maintenance) and one written copy-on-write, each after rounds of random
upserts and deletes, read through Iceberg's Spark source by path (the table
directory's version-hint.text, as Hadoop tables are found): exactly the latest
value of each live key, once; Spark's delete_files metadata table lists what
the snapshot summary counts.

Spark is pyspark's (tests/integration/requirements.txt), the runtime jar
.cache/java/spark (tools/install-deps.sh test); one local JVM for the module."""
import glob
import os

import pytest

import iceberg_util
from test_upsert_tables import MOR, MOR_V3, model_rounds, upsert_topic

pytestmark = pytest.mark.heavy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession
    jars = glob.glob(os.path.join(ROOT, ".cache", "java", "spark",
                                  "iceberg-spark-runtime-*.jar"))
    assert jars, "Iceberg's Spark runtime missing: run tools/install-deps.sh test"
    s = (SparkSession.builder.master("local[1]").appName("lakestream-tests")
         .config("spark.jars", jars[0])
         .config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.shuffle.partitions", "1")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def spark_state(spark, tdir):
    rows = spark.read.format("iceberg").load(tdir).select("key", "value").collect()
    state = {}
    for r in rows:
        k = bytes(r["key"])
        assert k not in state, "key %r twice in Spark's read" % k
        state[k] = bytes(r["value"])
    return state


def spark_lineage(spark, tdir):
    """{key: (_row_id, _last_updated_sequence_number)} of a v3 table, as
    Spark reads Iceberg's row lineage metadata columns."""
    rows = spark.read.format("iceberg").load(tdir).select(
        "key", "_row_id", "_last_updated_sequence_number").collect()
    return {bytes(r["key"]): (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


@pytest.mark.timeout(300)  # a JVM start and a Spark read per round, on a loaded machine
@pytest.mark.parametrize("strategy", ["merge-on-read", "copy-on-write", "merge-on-read-v3"])
def test_spark_reads_upsert_table(broker_factory, spark, strategy):
    """merge-on-read-v3 (format.version=3): deletion vectors instead of
    position delete files, and row lineage: every row Spark reads has a
    _row_id, unique in the table, and a key whose row no commit replaced
    since the last round keeps its _row_id and _last_updated_sequence_number
    through the maintenance rewrites that copied it."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    extra = {"merge-on-read": MOR, "copy-on-write": {}, "merge-on-read-v3": MOR_V3}[strategy]
    topic, tdir = upsert_topic(b, "upspark", **extra)
    before = {}

    def check(t, model):
        assert spark_state(spark, tdir) == model
        if strategy != "merge-on-read-v3":
            return
        lin = spark_lineage(spark, tdir)
        ids = [v[0] for v in lin.values()]
        assert None not in ids and len(set(ids)) == len(ids), "row ids not unique"
        for k, (old_model, old_lin) in before.items():
            if k in model and model[k] == old_model:
                assert lin[k] == old_lin, "key %r lost its lineage" % k
        before.clear()
        before.update({k: (model[k], lin[k]) for k in model})
    t, model, _ = model_rounds(b, topic, tdir, seed=37, check=check)
    deletes = spark.read.format("iceberg").load(tdir + "#delete_files").count()
    summary = t.metadata.current_snapshot().summary
    assert deletes == int(summary.get("total-delete-files") or 0)
    if strategy == "copy-on-write":
        assert deletes == 0
    else:
        assert any(int(s.summary.get("added-position-deletes") or 0) > 0
                   for s in t.metadata.snapshots)
