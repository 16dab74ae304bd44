"""argus.observe on the GPU (skipped without one; ctest runs it through
tests/api/test_python_gpu.sh, which exits 77 then): the overhead example's
durations as Value objects, observed, in ns, with provenance, and the
report read back from the workspace."""
import os

import pytest

import argus
from conftest import build_dir, gpu_reason, source_dir

pytestmark = pytest.mark.skipif(gpu_reason() is not None, reason=str(gpu_reason()))


def test_observe_duration(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "%s/examples:%s" % (build_dir(), os.environ.get("PATH", "")))
    spec = source_dir() / "examples" / "overhead" / "spec.json"
    with argus.Workspace(tmp_path / "ws") as ws:
        r = argus.observe(spec, region="overhead_compute/work", signals=["duration", "occurrences"],
                          workspace=ws, timeout_s=120)
        assert not [m for m in r.missing if m.get("signal") in ("duration", "occurrences")]
        d = r.get(region="overhead_compute/work", signal="duration")
        assert d, [v for v in r.values]
        for v in d:
            # the marker's own cost ('bias') is derived; every measured statistic is observed
            assert v.qual == ("derived" if v.stat == "bias" else "observed"), (v.stat, v.qual)
            assert v.provenance["tasks"]
        assert any(v.stat == "bias" for v in d)
        totals = [v for v in d if v.stat == "total"]
        assert totals and totals[0].unit == "ns" and totals[0].value > 0
        step = r.get(region="overhead_compute/work/step", signal="occurrences", stat="count")
        assert step and step[0].value > 0
        assert ws.report(r.hash).values == r.values
