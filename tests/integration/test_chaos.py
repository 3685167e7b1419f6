"""Short nemesis run (the long one is `make chaos CYCLES=N`): kill -9 under
idempotent load, once on clean stores and once with fault-injecting object
store and metadata underneath; nothing acknowledged may be lost, nothing may
appear twice or out of order."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos"))

import chaos  # noqa: E402


@pytest.mark.parametrize("faults", [False, True], ids=["clean-stores", "faulty-stores"])
def test_chaos_short(tmp_path, faults):
    if faults and os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("the faulty run wraps the local stores")
    r = chaos.run(cycles=2, records=2000, partitions=3, faults=faults, seed=4242,
                  work=str(tmp_path), log=lambda *_: None)
    assert r["acknowledged"] > 0
    assert r["broker_exit"] in (0, None), r
    assert (r["lost"], r["duplicated"], r["reordered"], r["strangers"]) == (0, 0, 0, 0), r
