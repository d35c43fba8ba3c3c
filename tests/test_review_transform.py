"""The pretrainer as a scikit-learn transformer: embeddings as features (found by a review of that use)."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import StandardScaler

from tabformer import TabFormerPretrainer

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 40
    index = np.arange(100, 100 + n)[::-1]  # not a RangeIndex, and descending
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(list("xyz"), n)}, index=index)


@pytest.fixture(scope="module")
def pretrainer(table):
    return TabFormerPretrainer(**TINY).fit(table)


def test_get_feature_names_out_checks_input_features_as_sklearn_transformers_do(table, pretrainer):
    # They were ignored: names of other columns than fit's (a step wired to the wrong columns) passed silently,
    # where PCA and every sklearn transformer raise (sklearn's check_transformer_get_feature_names_out).
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        pretrainer.get_feature_names_out(["a", "b", "zz"])
    with pytest.raises(ValueError, match="input_features"):
        pretrainer.get_feature_names_out(["a", "b"])
    names = pretrainer.get_feature_names_out(["a", "b", "c"])  # fit's own names: accepted, as None
    assert list(names) == list(pretrainer.get_feature_names_out()) == [f"tabformerpretrainer{i}" for i in range(16)]
    # a ColumnTransformer hands each step the names of its columns: these still pass
    union = ColumnTransformer([("emb", TabFormerPretrainer(**TINY), ["c", "a"]), ("num", StandardScaler(), ["b"])])
    assert union.fit_transform(table).shape == (40, 17)
    assert list(union.get_feature_names_out()[[0, -1]]) == ["emb__tabformerpretrainer0", "num__b"]


def test_save_and_load_keep_set_output(table, pretrainer, tmp_path):
    # set_output is no parameter: save wrote none of it, so a pretrainer answering DataFrames answered
    # arrays once loaded (pickle kept it).
    from sklearn.base import clone

    from tabformer import load

    framed = clone(pretrainer).set_output(transform="pandas").fit(table)
    framed.save(tmp_path / "framed")
    out = load(tmp_path / "framed").transform(table)
    assert isinstance(out, pd.DataFrame) and list(out.index) == list(table.index)
    pd.testing.assert_frame_equal(out, framed.transform(table), atol=1e-6)
    # the CLI writes its own column names: a frame it renamed by reindexing would have read all NaN
    from tabformer.cli import main

    table.to_csv(tmp_path / "rows.csv", index=False)
    assert main(["predict", str(tmp_path / "framed"), str(tmp_path / "rows.csv"), "--output", str(tmp_path / "z.csv")]) == 0
    written = pd.read_csv(tmp_path / "z.csv")
    assert list(written.columns[:2]) == ["embedding0", "embedding1"] and np.isfinite(written.to_numpy()).all()
    np.testing.assert_allclose(written.to_numpy(), out.to_numpy(), atol=1e-5)
    pretrainer.save(tmp_path / "plain")  # no set_output: arrays, and nothing more in the config
    assert isinstance(load(tmp_path / "plain").transform(table), np.ndarray)
    assert "output" not in json.loads((tmp_path / "plain" / "config.json").read_text())["estimator"]


@pytest.mark.parametrize(
    "check",
    ["check_transformer_get_feature_names_out", "check_transformer_get_feature_names_out_pandas", "check_set_output_transform"],
)
def test_sklearn_transformer_checks_that_parametrize_with_checks_leaves_out(check):
    # scikit-learn 1.9's parametrize_with_checks (tests/test_sklearn_checks.py) does not yield these; the first two
    # failed while get_feature_names_out ignored input_features.
    import warnings

    from sklearn.utils import estimator_checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks' random tables: the pretrainer's fit warnings
        getattr(estimator_checks, check)("TabFormerPretrainer", TabFormerPretrainer(**TINY, validation_fraction=None))


@pytest.mark.parametrize("kind", ["classifier", "masked_cells", "mlm"])
def test_an_encoder_with_narrower_embeddings_trains_from_scratch(kind):
    # encoder__embedding_size (ELECTRA's factorised embeddings) crashed every estimator built from scratch: the
    # embedder was built d_model wide ("tokens have width 16, the encoder expects 8"), and the masked-token heads
    # scored d_model-wide states against the narrower tied embeddings.
    from tabformer import TabFormerClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "c": rng.choice(list("xyz"), 60)})
    texts = [" ".join(rng.choice(["good", "bad", "film", "plot", "actor"], 5)) for _ in range(60)]
    narrow = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, encoder__embedding_size=8, max_epochs=1)
    narrow.update(verbose=0, random_state=0)
    if kind == "classifier":
        model = TabFormerClassifier(**narrow).fit(X, (X["a"] > 0).astype(int))
        assert model.predict_proba(X).shape == (60, 2)
    elif kind == "masked_cells":
        model = TabFormerPretrainer(**narrow).fit(X)
    else:
        model = TabFormerPretrainer(tokenizer="wordpiece", tokenizer__vocab_size=40, **narrow).fit(texts)
    assert model.module_.encoder.embedding_size == 8 and np.isfinite(model.history[-1, "train_loss"])
