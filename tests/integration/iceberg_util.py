"""Reading a broker's materialized tables from its local object directory,
shared by the Python integration tests (file object store only)."""

import glob
import os
import re
import time

import pytest

pyiceberg_table = pytest.importorskip("pyiceberg.table")


def local_store_only():
    """Skips the calling test when the warehouse is not on the local disk."""
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("reads the warehouse from the local object directory")


def table_dir(broker, table, namespace="default"):
    return os.path.join(broker.data_dir, "objects", "warehouse", namespace, table)


def current_metadata(tdir):
    """Path of the newest v<N>.metadata.json of the table at tdir, or None."""
    files = glob.glob(os.path.join(tdir, "metadata", "v*.metadata.json"))
    if not files:
        return None
    return max(files, key=lambda f: int(re.search(r"v(\d+)\.metadata\.json$", f).group(1)))


def wait_rows(tdir, want, timeout=60):
    """Waits until the newest metadata's snapshot holds at least `want` rows
    (PyIceberg scan); returns (StaticTable, arrow rows, metadata path)."""
    deadline = time.monotonic() + timeout
    rows = None
    while time.monotonic() < deadline:
        md = current_metadata(tdir)
        if md:
            t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
            rows = t.scan().to_arrow()
            if rows.num_rows >= want:
                return t, rows, md
        time.sleep(0.2)
    raise AssertionError("table %s has %s rows after %ss, want %d"
                         % (tdir, rows.num_rows if rows is not None else "no", timeout, want))
