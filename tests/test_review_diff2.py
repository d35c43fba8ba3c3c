"""Review of the warnings/input-kind diff: what the changes themselves broke."""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.estimators._input_kind import check_input_kind
from tabformer.tokenizers import MixedTokenizer, TabularTokenizer, WordPieceTokenizer
from tabformer.tokenizers._column_hints import _date_shape
from tabformer.tokenizers._columns import ColumnWarnings
from tabformer.tokenizers._texts import warn_truncated, warn_unread

SMALL = dict(max_epochs=1, verbose=0, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2)


def test_a_chunked_predict_names_the_setting_not_a_placeholder():
    # The gathered message lacked its f prefix: it advised "raise {setting}".
    gathered = ColumnWarnings()
    with gathered.gathering():
        warn_truncated([40], budget=7, max_length=8)
    (message,) = gathered.notices
    assert "{setting}" not in message and "raise tokenizer__max_length" in message


def test_a_named_text_routing_advises_its_own_max_length():
    texts = ["good film " * 30, "bad film " * 30] * 5
    X = pd.DataFrame({"desc": texts, "n": np.arange(10.0)})
    text = WordPieceTokenizer(max_length=8, vocab_size=50, min_frequency=1)
    tok = MixedTokenizer(transformers=[("desc", text, ["desc"]), ("rest", TabularTokenizer(), ["n"])]).fit(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok.transform(X)
    (message,) = [str(w.message) for w in caught if "truncated" in str(w.message)]
    # tokenizer__text__max_length is refused there: text is no routing of this tokenizer
    assert "raise tokenizer__desc__max_length" in message and "column(s) ['desc']" in message
    tok.set_params(desc__max_length=32)  # the advice is a setting that exists


@pytest.mark.parametrize(
    "value, shape",
    [
        ("2018-03-01", "YYYY-MM-DD"),
        ("2018-03-01 12:30", "YYYY-MM-DD hh:mm"),
        ("2018-03-01T12:30:00", "YYYY-MM-DDThh:mm:ss"),
        ("2018-03-01 12:30+0200", "YYYY-MM-DD hh:mm\u00b1hhmm"),  # read "hh:mm+ss00" by position
        ("2018-03-01 12:30:00.123456", "YYYY-MM-DD hh:mm:ss.fff"),  # kept the row's digits
        ("2018-03-01T12:30:00-05:00", "YYYY-MM-DDThh:mm:ss\u00b1hh:mm"),
        ("2018-03-01Z", "YYYY-MM-DDZ"),
    ],
)
def test_a_date_shape_holds_no_digit_of_the_row(value, shape):
    assert _date_shape(value) == shape


def test_two_folds_of_dates_with_offsets_warn_the_same_text():
    def warned(first):
        frame = pd.DataFrame({"when": [first, "2020-06-01 08:00:00.5+02:00"] * 10, "x": np.arange(20.0)})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            TabularTokenizer().fit(frame)
        return [str(w.message) for w in caught if "dates written as strings" in str(w.message)]

    one, other = warned("2019-01-02 07:15:00.25-05:00"), warned("2021-11-30 23:59:59.999+01:00")
    assert one and one == other


def test_a_text_model_still_reads_texts_that_end_like_a_file_name():
    # A one-text predict of "nice pic.jpg" (or a model of file names) was refused as images.
    tokenizer = WordPieceTokenizer()
    check_input_kind(tokenizer, ["nice pic.jpg"], "TabFormerClassifier")
    check_input_kind(tokenizer, pd.Series(["a.png", "b.gif"]), "TabFormerClassifier")
    with pytest.raises(ValueError, match=r"fitted on texts, but X is a Series of 2 images"):
        check_input_kind(tokenizer, pd.Series([np.zeros((8, 8))] * 2), "TabFormerClassifier")
    with pytest.raises(ValueError, match="fitted on a table"):  # a table model reads no list of str: still refused
        check_input_kind(TabularTokenizer(), ["a.png", "b.png"], "TabFormerClassifier")


def test_a_fitted_text_classifier_predicts_a_text_ending_in_an_image_extension():
    clf = TabFormerClassifier(tokenizer="wordpiece", **SMALL).fit(["good film", "bad film"] * 20, np.arange(40) % 2)
    assert clf.predict(["look at this film.jpg"]).shape == (1,)


def test_unknown_words_of_a_vocabulary_learned_at_fit_advise_fitting_on_them():
    # Advising tokenizer='wordpiece' to a model that already learned its vocabulary from fit's texts changed nothing.
    english = WordPieceTokenizer(vocab_size=200).fit([f"the {w} was good and fast" for w in ("food", "room", "staff")] * 5)
    with pytest.warns(UserWarning, match=r"\[UNK\].*or fit on texts of that language or script too") as caught:
        english.transform(["อาหารอร่อยมาก", "ห้องพักสะอาด บริการดี"])
    assert not any("to build a vocabulary from these texts" in str(w.message) for w in caught)
    with pytest.warns(UserWarning, match="or tokenizer='wordpiece' to build a vocabulary from these texts"):
        warn_unread([2], [([1, 3], [0, 0])], budget=7, max_length=8, trained=False)  # a vocab_file or pretrained one
