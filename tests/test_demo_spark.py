"""`mergetree demo-spark` end to end with tiny sizes, on the run's shared SparkSession.  The
demo lives in the checkout's examples/, not in the installed package."""
from __future__ import annotations

import sys

import pytest
from conftest import IN_SOURCE_TREE, REPO_ROOT


@pytest.mark.skipif(not IN_SOURCE_TREE, reason="the demos live in a source checkout's examples/")
def test_demo_spark_pipeline_verifies(spark, tmp_path, capsys):
    sys.path.insert(0, str(REPO_ROOT))
    from examples.demo_spark import main
    code = main(["--events", "2000", "--buckets", "4", "--dir", str(tmp_path / "demo")], spark=spark)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "FAILED" not in out and out.rstrip().endswith("ok"), out
    assert "3 buckets pruned" in out and "Exchange in physical plan: False" in out, out
    assert not spark.sparkContext._jsc.sc().isStopped()  # the shared session keeps running
