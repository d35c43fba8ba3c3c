"""Edge-case inputs real users pass: each test failed (or misled) before its fix."""

from tabformer import TabFormerClassifier
from tabformer.tokenizers import TabularTokenizer

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, verbose=0, random_state=0)


def test_rows_as_lists_keep_number_columns_numeric_next_to_text_columns():
    # np.asarray([[1.5, "red"], ...]) is one str array: the prices became categories, without a warning.
    rows = [[1.5, "red"], [2.0, "blue"], [3.25, "red"], [4.0, "blue"]] * 3
    tokenizer = TabularTokenizer().fit(rows)
    assert tokenizer.numeric_columns_ == ["x0"] and tokenizer.categorical_columns_ == ["x1"]
    clf = TabFormerClassifier(**SMALL).fit(rows, [0, 1, 0, 1] * 3)
    assert clf.tokenizer_.numeric_columns_ == ["x0"]
    assert clf.predict([[10.0, "red"]]).shape == (1,)  # a price never seen is a number, not an unseen category
