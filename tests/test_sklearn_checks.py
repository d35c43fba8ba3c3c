"""scikit-learn's own estimator checks, with every expected failure explained."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from tabformer import TabFormerClassifier, TabFormerRegressor

SMALL = dict(
    encoder__d_model=8,
    encoder__n_heads=2,
    encoder__n_layers=1,
    max_epochs=15,
    lr=1e-2,
    batch_size=64,
    validation_fraction=None,
    random_state=0,
    verbose=0,
)

# Declared failures, each with the reason it cannot (or should not) pass.
_SKORCH_INIT = (
    "skorch's NeuralNet.__init__ sets history_, initialized_ and virtual_params_, and stores "
    "routed prefix__ parameters (encoder__d_model...) as attributes; clone/get_params handle both"
)
_WEIGHTS_VS_REPEATS = (
    "mini-batch training: a repeated row lands in other shuffled batches than its weighted twin, and the "
    "tokenizer's numeric bins count rows; tests/test_weights.py checks weight 2 == a duplicated row where "
    "that holds (full batch, no dropout, no shuffling, categorical columns)"
)
EXPECTED_FAILURES = {
    "TabFormerClassifier": {
        "check_no_attributes_set_in_init": _SKORCH_INIT,
        "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_VS_REPEATS,
    },
    "TabFormerRegressor": {
        "check_no_attributes_set_in_init": _SKORCH_INIT,
        "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_VS_REPEATS,
    },
}


def expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    # The regressor check asks for R^2 > 0.5 on 200 rows: give it enough epochs.
    [TabFormerClassifier(**SMALL), TabFormerRegressor(**{**SMALL, "max_epochs": 60})],
    expected_failed_checks=expected_failures,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
