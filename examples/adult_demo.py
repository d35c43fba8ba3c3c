"""tabformer on the UCI Adult census table, next to two strong classic baselines.

Run with ``make demo`` (sets everything up) or ``python examples/adult_demo.py``.
Trains ``TabFormerClassifier`` with default settings on a fixed stratified 75/25 split
and prints accuracy, ROC AUC and fit time beside HistGradientBoosting and
LogisticRegression on one-hot columns.
"""

import time

import pandas as pd
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from tabformer import TabFormerClassifier
from tabformer.datasets import load_adult

POSITIVE = ">50K"


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


def main():
    X, y = load_adult()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    print(f"Adult: {len(X_train)} training rows, {len(X_test)} test rows, {X_train.shape[1]} columns\n")
    rows = [evaluate("tabformer (defaults)", TabFormerClassifier(random_state=0), X_train, X_test, y_train, y_test)]
    for name, model in baselines().items():
        rows.append(evaluate(name, model, X_train, X_test, y_train, y_test))
    table = pd.DataFrame(rows).set_index("model")
    print()
    print(table.to_string(formatters={"accuracy": "{:.4f}".format, "roc_auc": "{:.4f}".format, "fit_seconds": "{:.1f}".format}))
    return table


if __name__ == "__main__":
    main()
