"""tabformer on the UCI Adult census table, next to two strong classic baselines.

Run with ``make demo`` (sets everything up) or ``python examples/adult_demo.py``.
Trains ``TabFormerClassifier`` with default settings on a fixed stratified 75/25 split
and prints accuracy, ROC AUC and fit time beside HistGradientBoosting and
LogisticRegression on one-hot columns.
"""

import argparse
import time

import pandas as pd
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier
from tabformer.datasets import load_adult

POSITIVE = ">50K"


class Eta(Callback):
    """After the first epoch, say how long the rest can take (early stopping usually ends sooner)."""

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == 1:
            seconds, epochs = net.history[-1, "dur"], net.resolved_params_["max_epochs"]
            print(
                f"first epoch: {seconds:.0f}s; at most {epochs - 1} more (about {seconds * (epochs - 1) / 60:.0f} min), "
                f"early stopping (patience {net.resolved_params_['patience']}) usually ends sooner",
                flush=True,
            )


def as_categories(frame: pd.DataFrame) -> pd.DataFrame:
    strings = frame.select_dtypes(exclude="number").columns
    return frame.astype({c: "category" for c in strings})


def baselines():
    numeric = make_column_selector(dtype_include="number")
    strings = make_column_selector(dtype_exclude="number")
    logistic = make_pipeline(
        make_column_transformer(
            (StandardScaler(), numeric),
            (OneHotEncoder(handle_unknown="ignore"), strings),
        ),
        LogisticRegression(max_iter=2000),
    )
    boosting = make_pipeline(
        # HistGradientBoosting reads pandas categories natively.
        FunctionTransformer(as_categories),
        HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0),
    )
    return {"HistGradientBoosting": boosting, "LogisticRegression (one-hot)": logistic}


def evaluate(name, model, X_train, X_test, y_train, y_test):
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)[:, list(model.classes_).index(POSITIVE)]
    return {
        "model": name,
        "accuracy": accuracy_score(y_test, model.predict(X_test)),
        "roc_auc": roc_auc_score(y_test == POSITIVE, proba),
        "fit_seconds": seconds,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="train on a slice of this many rows (default: all)")
    args = parser.parse_args(argv)
    X, y = load_adult()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    if args.rows:
        X_train, y_train = X_train.iloc[: args.rows], y_train.iloc[: args.rows]
    print(f"Adult: {len(X_train)} training rows, {len(X_test)} test rows, {X_train.shape[1]} columns")
    print("tabformer trains first (one line per epoch), then the two baselines (about a second)\n", flush=True)
    tabformer = TabFormerClassifier(random_state=0, callbacks=[("eta", Eta())])
    rows = [evaluate("tabformer (defaults)", tabformer, X_train, X_test, y_train, y_test)]
    for name, model in baselines().items():
        rows.append(evaluate(name, model, X_train, X_test, y_train, y_test))
    table = pd.DataFrame(rows).set_index("model")
    print()
    print(table.to_string(formatters={"accuracy": "{:.4f}".format, "roc_auc": "{:.4f}".format, "fit_seconds": "{:.1f}".format}))
    return table


if __name__ == "__main__":
    main()
