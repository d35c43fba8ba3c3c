"""Grid search over tabformer estimators on a real dask.distributed cluster (joblib's Dask backend)."""

import numpy as np
import pytest
import torch

distributed = pytest.importorskip("distributed")

from conftest import TINY, make_table  # noqa: E402
from joblib import parallel_backend  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from tabformer import TabFormerClassifier  # noqa: E402


def _trial_threads(_):
    import torch

    return torch.get_num_threads()


def _search(X, y):
    settings = {k: v for k, v in TINY.items() if k != "encoder__d_model"}
    grid = {"encoder__d_model": [8, 16]}
    return GridSearchCV(TabFormerClassifier(random_state=0, **settings), grid, cv=2, error_score="raise").fit(X, y)


def test_grid_search_runs_on_a_local_cluster_with_two_workers():
    X, y = make_table(96)
    # Processes, one thread each: every trial trains in its own process with one torch thread.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        assert set(client.gather(client.map(_trial_threads, range(4)))) == {1}
        with parallel_backend("dask"):
            search = _search(X, y)
        workers = {worker["id"] for worker in client.scheduler_info()["workers"].values()}
    assert len(workers) == 2
    assert len(search.cv_results_["params"]) == 2
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers: the same float operations in the same order
    try:
        serial = _search(X, y)
    finally:
        torch.set_num_threads(threads)
    # The same seeded fits, wherever they ran.
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"], atol=1e-6)
