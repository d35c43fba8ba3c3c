"""A data scientist's project on the Lending Club loans table, start to ship (a review in this release).

Each test reproduces, on a small synthetic frame, what went wrong on the real 10,000 x 55 table.
"""

import numpy as np
import pandas as pd
import pytest

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, random_state=0, verbose=0)


def test_table_attention_plot_of_many_columns_keeps_every_name_readable():
    # Lending Club has 46 feature columns: on the fixed 7 x 3.5 inch figure their names were
    # drawn on top of each other (about 0.05 inch a bar for a 0.14 inch label)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tabformer import TabFormerClassifier, plot

    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"num_accounts_{i}": rng.normal(size=60) for i in range(46)})
    y = np.where(X.iloc[:, 0] > 0, "A", "B")
    clf = TabFormerClassifier(**TINY).fit(X, y)
    try:
        ax = plot.attention(clf, X.iloc[[0]])
        ax.figure.canvas.draw()
        boxes = sorted((label.get_window_extent() for label in ax.get_yticklabels()), key=lambda box: box.y0)
        assert len(boxes) == 46
        for lower, upper in zip(boxes, boxes[1:]):
            assert lower.y1 <= upper.y0 + 0.5, "two column names overlap"
    finally:
        plt.close("all")


def _loans(n=150, seed=0):
    """A small Lending Club-like frame: a number, a zip code of many values, a job title."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "annual_income": rng.lognormal(11, 0.5, n),
            "zip_code": [f"{z:05d}" for z in rng.integers(10000, 99999, n)],
            "emp_title": [f"{a} {b}" for a, b in zip(rng.choice(["senior", "lead", "junior"], n), rng.integers(0, 900, n))],
        }
    )
    return X, np.where(X["annual_income"] > np.median(X["annual_income"]), "A", "B")


def test_a_plain_tables_settings_reach_the_table_of_a_frame_auto_finds_mixed():
    # The Lending Club frame is mixed (emp_title is text), so the documented
    # tokenizer__numeric_embedding / tokenizer__categorical_columns=["zip_code"] raised
    # "Invalid parameter 'numeric_embedding' for estimator MixedTokenizer"
    from tabformer import TabFormerClassifier

    X, y = _loans()
    clf = TabFormerClassifier(**TINY, tokenizer__numeric_embedding="linear", tokenizer__categorical_columns=["zip_code"])
    clf.fit(X, y)
    assert clf.tokenizer_.column_kinds_ == {"annual_income": "numeric", "zip_code": "categorical", "emp_title": "text"}
    assert clf.tokenizer_.table.numeric_embedding == "linear"
    assert clf.get_params()["tokenizer__numeric_embedding"] == "linear"  # as passed
    assert clf.predict(X.iloc[:5]).shape == (5,)


def test_a_column_named_categorical_does_not_make_a_table_mixed():
    # a zip code of more than 100 distinct strings is detected as text; named in
    # categorical_columns it is the table's column, and the table stays a plain table
    from tabformer import TabFormerClassifier
    from tabformer.tokenizers import TabularTokenizer

    X, y = _loans()
    X = X.drop(columns="emp_title")
    clf = TabFormerClassifier(**TINY, tokenizer__categorical_columns=["zip_code"]).fit(X, y)
    assert isinstance(clf.tokenizer_, TabularTokenizer)
    assert clf.tokenizer_.categorical_columns_ == ["zip_code"]


def test_numbers_that_arrive_as_strings_name_the_cell_that_is_not_a_number():
    # one "$1,000" in a CSV of new loans made annual_income a column of strings; the error named
    # the column but not which of its rows to fix
    from tabformer import TabFormerClassifier

    X, y = _loans()
    X = X.drop(columns="zip_code")
    clf = TabFormerClassifier(**TINY).fit(X, y)
    new = X.iloc[:20].astype({"annual_income": object})
    new.loc[7, "annual_income"] = "$1,000"
    new.loc[3, "annual_income"] = None
    with pytest.raises(ValueError, match=r"'annual_income' changed kind.*row 7 holds '\$1,000', which is not a number"):
        clf.predict(new)
    with pytest.raises(ValueError, match="numbers written as text"):
        clf.predict(X.iloc[:20].astype({"annual_income": str}))


def test_the_cli_names_the_row_of_a_date_it_cannot_read_without_pandas_advice(tmp_path, capsys):
    # new loans written "03/01/2018" in a column fitted on ISO dates: the error was pandas' own,
    # advising `format=` (which the command line does not take) and naming no row
    from tabformer.cli import main

    rng = np.random.default_rng(0)
    issued = pd.Timestamp("2018-01-01") + pd.to_timedelta(rng.integers(0, 90, 60), unit="D")
    frame = pd.DataFrame({"loan_amount": rng.normal(size=60), "issue_d": issued.strftime("%Y-%m-%d")})
    frame["grade"] = np.where(frame["loan_amount"] > 0, "A", "B")
    frame.to_csv(tmp_path / "train.csv", index=False)
    tiny = ["--quiet", "--set", "max_epochs=1", "--set", "encoder__d_model=16", "--set", "encoder__n_layers=1"]
    assert main(["fit", str(tmp_path / "train.csv"), "--target", "grade", "--out", str(tmp_path / "m"), *tiny]) == 0
    new = frame.drop(columns="grade").head(5)
    new.loc[2, "issue_d"] = "03/01/2018"
    new.to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "new.csv")]) == 2
    err = capsys.readouterr().err
    assert "column 'issue_d'" in err and "row 2 holds '03/01/2018'" in err and "You might want" not in err
