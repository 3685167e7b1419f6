"""Reading a broker's materialized tables from its local object directory,
shared by the Python integration tests (file object store only)."""

import glob
import os
import re
import time

import pytest

pyiceberg_table = pytest.importorskip("pyiceberg.table")
ManifestEntryStatus = pytest.importorskip("pyiceberg.manifest").ManifestEntryStatus


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


def local_path(uri):
    """The path of a file:// location."""
    assert uri.startswith("file://"), uri
    return uri[len("file://"):]


def referenced_files(t):
    """Local paths of every file a reader of StaticTable t may open: its metadata file, every
    snapshot's manifest list, their manifests and every data file those name
    live, or name deleted by one of its snapshots (an incremental read of that
    snapshot's changes opens it; a file deleted by a snapshot expired since is
    no snapshot's file any more, though a carried manifest may still list it)."""
    io = t.io
    ids = {s.snapshot_id for s in t.metadata.snapshots}
    files = {local_path(t.metadata_location)}
    for snap in t.metadata.snapshots:
        files.add(local_path(snap.manifest_list))
        for m in snap.manifests(io):
            files.add(local_path(m.manifest_path))
            for e in m.fetch_manifest_entry(io, discard_deleted=False):
                if e.status != ManifestEntryStatus.DELETED or e.snapshot_id in ids:
                    files.add(local_path(e.data_file.file_path))
    return files
