"""sample_weight (through metadata routing) and class_weight."""

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from tabformer import TabFormerClassifier, TabFormerRegressor, TabFormerTagger, WordPieceTokenizer

# Deterministic training: one full batch in a fixed order, no dropout, no holdout, fixed seed.
EXACT = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    encoder__dropout=0.0,
    encoder__attention_dropout=0.0,
    batch_size=-1,
    iterator_train__shuffle=False,
    validation_fraction=None,
    max_epochs=5,
    lr=1e-2,
    random_state=0,
    verbose=0,
)


def categorical_table(n=30, seed=0):
    # Categorical columns only: a duplicated row changes no vocabulary and no numeric bin.
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"colour": rng.choice(["red", "blue", "green"], n), "size": rng.choice(["s", "m", "l"], n)})
    return X, np.where((X["colour"] == "red") | (X["size"] == "l"), "yes", "no")


def duplicated(X, y, row):
    order = np.r_[np.arange(len(X)), row]
    return X.iloc[order].reset_index(drop=True), np.asarray(y)[order]


@pytest.mark.parametrize("row", [0, 7])
def test_weight_two_equals_a_duplicated_row_classifier(row):
    X, y = categorical_table()
    weights = np.ones(len(X))
    weights[row] = 2
    weighted = TabFormerClassifier(**EXACT).fit(X, y, sample_weight=weights)
    repeated = TabFormerClassifier(**EXACT).fit(*duplicated(X, y, row))
    unweighted = TabFormerClassifier(**EXACT).fit(X, y)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-5)
    # and the weight mattered: the plain fit differs
    assert np.abs(unweighted.predict_proba(X) - weighted.predict_proba(X)).max() > 1e-4


def test_weight_two_equals_a_duplicated_row_regressor():
    X, label = categorical_table()
    y = (label == "yes") * 3.0 + np.arange(len(X)) / 10
    weights = np.ones(len(X))
    weights[3] = 2
    # standardize_target=False: the target's mean and std count rows, not weights
    params = dict(EXACT, standardize_target=False)
    weighted = TabFormerRegressor(**params).fit(X, y, sample_weight=weights)
    repeated = TabFormerRegressor(**params).fit(*duplicated(X, y, 3))
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), atol=1e-4)


def test_zero_weight_rows_and_equal_weights():
    X, y = categorical_table()
    plain = TabFormerClassifier(**EXACT).fit(X, y)
    # equal weights change nothing (bit-identical: the unweighted path runs)
    np.testing.assert_array_equal(
        TabFormerClassifier(**EXACT).fit(X, y, sample_weight=np.full(len(X), 3.0)).predict_proba(X), plain.predict_proba(X)
    )
    with pytest.raises(ValueError, match="non-zero"):
        TabFormerClassifier(**EXACT).fit(X, y, sample_weight=np.zeros(len(X)))
    with pytest.raises(ValueError, match="(?i)negative"):
        TabFormerClassifier(**EXACT).fit(X, y, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="shape"):
        TabFormerClassifier(**EXACT).fit(X, y, sample_weight=np.ones(3))


def test_class_weight_dict_equals_the_sample_weights_it_implies():
    X, y = categorical_table()
    by_class = TabFormerClassifier(**EXACT, class_weight={"yes": 3.0}).fit(X, y)
    by_row = TabFormerClassifier(**EXACT).fit(X, y, sample_weight=np.where(y == "yes", 3.0, 1.0))
    np.testing.assert_allclose(by_class.predict_proba(X), by_row.predict_proba(X), atol=1e-6)
    balanced = TabFormerClassifier(**EXACT, class_weight="balanced").fit(X, y)
    counts = pd.Series(y).value_counts()
    implied = (len(y) / (2 * counts))[y].to_numpy()
    np.testing.assert_allclose(
        balanced.predict_proba(X),
        TabFormerClassifier(**EXACT).fit(X, y, sample_weight=implied).predict_proba(X),
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="not in y"):
        TabFormerClassifier(**EXACT, class_weight={"maybe": 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        TabFormerClassifier(**EXACT, class_weight="uniform").fit(X, y)


def test_metadata_routing_through_pipeline_and_cross_validate():
    X, y = categorical_table(n=40)
    weights = np.where(y == "yes", 2.0, 1.0)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = TabFormerClassifier(**EXACT).set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        pipe = make_pipeline(FunctionTransformer(), clf)
        pipe.fit(X, y, sample_weight=weights)
        direct = TabFormerClassifier(**EXACT).fit(X, y, sample_weight=weights)
        np.testing.assert_allclose(pipe.predict_proba(X), direct.predict_proba(X), atol=1e-6)
        result = cross_validate(clf, X, y, cv=KFold(2), params={"sample_weight": weights})
        assert result["test_score"].shape == (2,)
        # not requested: routing refuses the weights instead of dropping them
        with pytest.raises(ValueError, match="sample_weight"):
            make_pipeline(FunctionTransformer(), TabFormerClassifier(**EXACT)).fit(X, y, sample_weight=weights)


SENTENCES = [["Alice", "visited", "Paris"], ["Bob", "left", "Rome", "today"], ["Carol", "stayed"], ["Rome", "welcomed", "Bob"]]
TAGS = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "B-LOC", "O"], ["B-PER", "O"], ["B-LOC", "O", "B-PER"]]


@pytest.fixture
def vocabulary(tmp_path):
    # A fixed vocabulary: a trained one could differ when a sentence is repeated.
    return (
        WordPieceTokenizer(vocab_size=60, min_frequency=1, lowercase=False)
        .fit([" ".join(s) for s in SENTENCES])
        .save_vocabulary(tmp_path / "vocab.txt")
    )


def test_tagger_sentence_weight_two_equals_a_duplicated_sentence(vocabulary):
    params = dict(EXACT, tokenizer__vocab_file=vocabulary, tokenizer__lowercase=False)
    weighted = TabFormerTagger(**params).fit(SENTENCES, TAGS, sample_weight=[1, 2, 1, 1])
    repeated = TabFormerTagger(**params).fit(SENTENCES + [SENTENCES[1]], TAGS + [TAGS[1]])
    np.testing.assert_allclose(
        weighted.predict_subword_proba(SENTENCES)[0], repeated.predict_subword_proba(SENTENCES)[0], atol=1e-5
    )


def test_tagger_class_weight_moves_the_model(vocabulary):
    params = dict(EXACT, tokenizer__vocab_file=vocabulary, tokenizer__lowercase=False)
    plain = TabFormerTagger(**params).fit(SENTENCES, TAGS)
    balanced = TabFormerTagger(**params, class_weight="balanced").fit(SENTENCES, TAGS)
    by_dict = TabFormerTagger(**params, class_weight={"B-LOC": 5.0}).fit(SENTENCES, TAGS)
    p_plain, p_dict = plain.predict_subword_proba(SENTENCES)[0], by_dict.predict_subword_proba(SENTENCES)[0]
    assert np.abs(p_plain - balanced.predict_subword_proba(SENTENCES)[0]).max() > 1e-4
    loc = list(plain.classes_).index("B-LOC")
    # up-weighting B-LOC raises its probability where it is the tag (Paris, Rome)
    assert p_dict[0, 3, loc] > p_plain[0, 3, loc] or p_dict[1, 3, loc] > p_plain[1, 3, loc]
