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
from test_upsert_tables import MOR, model_rounds, upsert_topic

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


@pytest.mark.timeout(300)  # a JVM start and a Spark read per round, on a loaded machine
@pytest.mark.parametrize("strategy", ["merge-on-read", "copy-on-write"])
def test_spark_reads_upsert_table(broker_factory, spark, strategy):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    extra = MOR if strategy == "merge-on-read" else {}
    topic, tdir = upsert_topic(b, "upspark", **extra)

    def check(t, model):
        assert spark_state(spark, tdir) == model
    t, model, _ = model_rounds(b, topic, tdir, seed=37, check=check)
    deletes = spark.read.format("iceberg").load(tdir + "#delete_files").count()
    summary = t.metadata.current_snapshot().summary
    assert deletes == int(summary.get("total-delete-files") or 0)
    if strategy == "merge-on-read":
        assert any(int(s.summary.get("added-position-deletes") or 0) > 0
                   for s in t.metadata.snapshots)
    else:
        assert deletes == 0
