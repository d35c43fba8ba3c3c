import numpy as np
import pandas as pd
import pytest
import torch

from tabformer.tokenizers import TabularTokenizer, make_tokenizer
from tabformer.tokenizers.tabular import MISSING_ID, UNSEEN_ID


def test_kinds_are_detected_for_every_string_dtype():
    X = pd.DataFrame(
        {
            "obj": pd.Series(["a", "b", "a"], dtype=object),
            "strdtype": pd.Series(["x", "y", "x"], dtype="string"),
            "cat": pd.Series(["u", "v", "u"], dtype="category"),
            "flag": [True, False, True],
            "num": [1.0, 2.0, 3.0],
            "count": [1, 2, 3],
        }
    )
    tok = TabularTokenizer().fit(X)
    assert tok.categorical_columns_ == ["obj", "strdtype", "cat", "flag"]
    assert tok.numeric_columns_ == ["num", "count"]
    assert list(tok.get_feature_names_out()) == ["num", "count", "obj", "strdtype", "cat", "flag"]


def test_explicit_kinds_override_detection():
    X = pd.DataFrame({"zip": [75001, 10115, 75001], "x": [0.5, 0.1, 0.2]})
    tok = TabularTokenizer(categorical_columns=["zip"]).fit(X)
    assert tok.categorical_columns_ == ["zip"] and tok.numeric_columns_ == ["x"]
    ids = tok.transform(X)["cat_ids"][:, 0]
    assert ids[0] == ids[2] != ids[1]
    with pytest.raises(ValueError, match="both categorical and numeric"):
        TabularTokenizer(categorical_columns=["x"], numeric_columns=["x"]).fit(X)
    with pytest.raises(ValueError, match="'nope'"):
        TabularTokenizer(numeric_columns=["nope"]).fit(X)


def test_missing_and_unseen_categories_get_their_own_ids():
    train = pd.DataFrame({"c": ["a", "b", None, "a"]})
    tok = TabularTokenizer().fit(train)
    ids = tok.transform(pd.DataFrame({"c": ["b", "zzz", None, "a"]}))["cat_ids"][:, 0]
    assert ids[1] == UNSEEN_ID and ids[2] == MISSING_ID
    assert ids[0] >= 2 and ids[3] >= 2 and ids[0] != ids[3]
    assert UNSEEN_ID not in ids[[0, 3]]


def test_nan_numbers_get_a_missing_flag_and_learned_token():
    X = pd.DataFrame({"n": [1.0, np.nan, 3.0, 10.0]})
    tok = TabularTokenizer(numeric_transform="standard", numeric_embedding="linear").fit(X)
    batch = tok.transform(X)
    assert batch["num_missing"][:, 0].tolist() == [False, True, False, False]
    assert np.isfinite(batch["num_values"]).all()
    embedder = tok.build_embedder(8)
    tokens, mask = embedder(**{k: torch.as_tensor(v) for k, v in batch.items()})
    assert tokens.shape == (4, 1, 8)
    torch.testing.assert_close(tokens[1, 0], embedder.missing_embedding[0].detach())
    # The missing token is not what a zero value (the column mean) would produce.
    assert not torch.allclose(tokens[1, 0], embedder.numeric_bias[0].detach())


@pytest.mark.parametrize("embedding", ["linear", "periodic"])
def test_embedder_shapes_and_gradients(table, embedding):
    X, _ = table
    tok = TabularTokenizer(numeric_embedding=embedding).fit(X)
    batch = {k: torch.as_tensor(v) for k, v in tok.transform(X).items()}
    embedder = tok.build_embedder(12)
    tokens, mask = embedder(**batch)
    assert tokens.shape == (len(X), 4, 12)
    tokens.sum().backward()
    assert embedder.category_embedding.weight.grad is not None


def test_quantile_transform_tames_heavy_tails(table):
    X, _ = table
    values = TabularTokenizer().fit(X).transform(X)["num_values"]
    assert np.abs(values).max() < 6


def test_numpy_input_and_feature_count_check():
    X = np.random.default_rng(0).normal(size=(20, 3))
    tok = TabularTokenizer().fit(X)
    assert tok.numeric_columns_ == ["x0", "x1", "x2"] and not hasattr(tok, "feature_names_in_")
    with pytest.raises(ValueError, match="3"):
        tok.transform(X[:, :2])


def test_column_errors_name_the_columns(table):
    X, _ = table
    tok = TabularTokenizer().fit(X)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['city'\]"):
        tok.transform(X.drop(columns="city"))
    with pytest.raises(ValueError, match=r"unexpected column\(s\) \['extra'\]"):
        tok.transform(X.assign(extra=1))
    renamed = X.rename(columns={"age": "AGE"})
    with pytest.raises(ValueError, match="'age'.*'AGE'"):
        tok.transform(renamed)
    with pytest.raises(ValueError, match="'age' changed kind"):
        tok.transform(X.assign(age=X["age"].astype(str)))
    with pytest.raises(ValueError, match="'income' holds an infinite"):
        tok.transform(X.assign(income=np.inf))
    # Reordered columns are fine: they are matched by name.
    reordered = tok.transform(X[X.columns[::-1]])
    np.testing.assert_array_equal(reordered["cat_ids"], tok.transform(X)["cat_ids"])


def test_empty_and_one_dimensional_inputs():
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        TabularTokenizer().fit(pd.DataFrame({"a": pd.Series([], dtype=float)}))
    with pytest.raises(ValueError, match="Expected 2D array, got 1D"):
        TabularTokenizer().fit(np.arange(5.0))
    with pytest.raises(ValueError, match="no numbers"):
        TabularTokenizer().fit(pd.DataFrame({"a": [np.nan, np.nan]}))


def test_make_tokenizer_clones_and_rejects_unknown():
    mine = TabularTokenizer(numeric_transform="standard")
    made = make_tokenizer(mine)
    assert made is not mine and made.numeric_transform == "standard"
    with pytest.raises(ValueError, match="unknown tokenizer 'bogus'"):
        make_tokenizer("bogus")
