"""The fusion benchmark runs end to end on a slice of its five real datasets (smoke test)."""

import importlib.util
import os

import numpy as np
import pytest

from tabformer.datasets import MissingDatasetError

HERE = os.path.dirname(__file__)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_fusion", os.path.join(HERE, "..", "benchmarks", "bench_fusion.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_fusion_prints_every_row(capsys):
    bench = _bench()
    try:
        results = bench.main(["--limit", "120", "--seeds", "1", "--epochs", "1"])
    except MissingDatasetError as error:
        pytest.skip(str(error))
    labels = {title: [row[0] for row in rows] for title, _, rows in results}
    emoji, icons, tweets, lending, birds = labels.values()
    assert "tabformer defaults, text only" in icons and "HistGradientBoosting, all modalities" in icons
    assert any("late fusion" in r for r in emoji) and "tabformer defaults, image only" in emoji
    assert "tabformer defaults (fusion='auto': late)" in emoji and "tabformer defaults (fusion='auto': early)" in tweets
    assert "logistic regression, image only" in emoji and "logistic regression, all modalities" in emoji
    assert "tabformer defaults, table only" in tweets and "logistic regression, text only" in tweets
    assert any("mid fusion" in r for r in lending) and "HistGradientBoosting, all modalities" in lending
    assert "tabformer defaults (fusion='auto': early)" in birds and "logistic regression, text only" in birds
    for _, _, rows in results:
        assert all(np.isfinite(row[1]) for row in rows)
    out = capsys.readouterr().out
    assert "| tabformer, early fusion (fusion='early') |" in out and "R²" in out


# The tweets' hour is a code: cast to category, so fit does not warn that it holds numbers written as strings
@pytest.mark.filterwarnings("error:column 'hour' holds numbers written as strings")
def test_bench_fusion_adds_a_variant_row_beside_the_selected_ones():
    bench = _bench()
    argv = ["--dataset", "tweets", "--limit", "120", "--seeds", "1", "--epochs", "1", "--no-classic"]
    try:
        results = bench.main([*argv, "--only", "fusion='auto'", "--variant", "narrow:encoder__d_model=16,encoder__n_heads=2"])
    except MissingDatasetError as error:
        pytest.skip(str(error))
    ((_, _, rows),) = results
    assert [row[0] for row in rows] == ["tabformer defaults (fusion='auto': early)", "tabformer, narrow"]
    assert all(np.isfinite(row[1]) for row in rows)
