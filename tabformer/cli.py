"""The ``tabformer`` command line: fit, predict, pretrain, info and export, on CSV or Parquet.

::

    tabformer fit train.csv --target churn --out churn-model/ [--set encoder__n_layers=2 ...]
    tabformer predict churn-model/ new.parquet --proba > predictions.csv
    tabformer pretrain unlabeled/ --objective simclr --out encoder/
    tabformer info churn-model/
    tabformer export churn-model/ --onnx churn.onnx

Data files are ``.csv``, ``.tsv``, ``.parquet`` (needs pyarrow: ``pip install pyarrow``) or
``.txt`` (one text per line); a folder holds image files (one row each) or data files (their
rows, concatenated). Image columns hold file paths, relative to the data file's folder (or
``--image-root``). ``--set key=value`` sets any estimator parameter, routed ones included;
values are Python literals (``2``, ``3e-4``, ``None``, ``"cosine"``, ``[1, 2]``), anything else
is a string. Progress goes to stderr, results to stdout. Bad input (a missing target column,
an unreadable file, an unknown parameter) exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.utils.multiclass import type_of_target
from skorch.callbacks import Callback
from tqdm.auto import tqdm

from ._cli_input import CLIError, category_kinds, fit_text_columns, image_columns, read_data, text_columns
from ._cli_output import predictions
from ._version import __version__
from .estimators import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor
from .persistence import CONFIG_FILE, PersistenceError, load
from .persistence._files import Reader
from .persistence._format import check_header
from .tokenizers._column_hints import MIN_IDENTIFIER_ROWS

__all__ = ["main", "read_data", "category_kinds", "parse_settings"]


def parse_settings(pairs) -> dict:
    """``["lr=3e-4", "tokenizer=wordpiece"]`` -> ``{"lr": 0.0003, "tokenizer": "wordpiece"}``."""
    settings = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise CLIError(f"--set expects key=value, got {pair!r}")
        lowered = text.strip().lower()
        if lowered in ("true", "false", "none", "null"):
            value = {"true": True, "false": False}.get(lowered)
        else:
            try:
                value = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError):
                value = text
        settings[key.strip()] = value
    return settings


def _configure(estimator, settings: dict):
    try:
        return estimator.set_params(**settings)
    except ValueError as error:
        names = sorted(name for name in estimator.get_params(deep=False) if "__" not in name)
        bad = str(error).split("'")[1] if "'" in str(error) else error
        raise CLIError(f"unknown parameter {bad!r} for {type(estimator).__name__}; parameters: {', '.join(names)}") from None


# ----------------------------------------------------------------------------- progress
class EpochProgress(Callback):
    """One tqdm bar on stderr, advanced per epoch, with the epoch's losses."""

    def __init__(self, disable=False):
        self.disable = disable

    def on_train_begin(self, net, **kwargs):
        self.bar_ = tqdm(
            total=net._setting("max_epochs"), desc=type(net).__name__, unit="epoch", file=sys.stderr, disable=self.disable
        )

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        self.bar_.set_postfix({k: f"{row[k]:.4g}" for k in ("train_loss", "valid_loss", "valid_acc") if k in row})
        self.bar_.update(1)

    def on_train_end(self, net, **kwargs):
        self.bar_.close()


def _fit_with_progress(estimator, X, y, quiet):
    original = estimator.callbacks
    estimator.set_params(callbacks=list(original or []) + [("cli_progress", EpochProgress(disable=quiet))])
    try:
        estimator.fit(X, y)
    finally:
        estimator.callbacks = original  # the progress bar is not part of the saved model


def _summary(estimator) -> str:
    row = estimator.history_[-1] if len(estimator.history_) else {}
    metrics = ", ".join(f"{k} {row[k]:.4g}" for k in ("train_loss", "valid_loss", "valid_acc") if k in row)
    epochs = len(estimator.history_)
    return f"{epochs} epoch{'' if epochs == 1 else 's'}" + (f", last epoch: {metrics}" if metrics else "")


def _warn_saved_index(data: pd.DataFrame) -> None:
    """Say so when a short file's column looks like the row index ``DataFrame.to_csv`` writes by default.

    From ``MIN_IDENTIFIER_ROWS`` rows the library's identifier warning names it (saying it here too said it twice).
    """
    for column in data.columns:
        values = data[column]
        if len(values) >= MIN_IDENTIFIER_ROWS or not str(column).startswith("Unnamed: "):
            continue
        if pd.api.types.is_integer_dtype(values) and values.is_monotonic_increasing:
            # Row order can carry the target (a file sorted by it); new files number their rows afresh.
            print(
                f"tabformer: column {column!r} holds {values.iloc[0]}, {values.iloc[min(1, len(values) - 1)]}, ... "
                "(a DataFrame index saved by to_csv?): it trains as a feature; save the file with index=False",
                file=sys.stderr,
            )


# ----------------------------------------------------------------------------- commands
def cmd_fit(args):
    settings = parse_settings(args.set)
    texts = fit_text_columns(settings, args.target)
    data = read_data(args.data, args.image_root, parse_dates=True, texts=texts, target=args.target)
    if not isinstance(data, pd.DataFrame):
        raise CLIError(f"fit reads a table (CSV or Parquet) with a target column; {args.data} is not one")
    if args.target not in data.columns:
        raise CLIError(f"target column {args.target!r} is not in {args.data}; its columns are {list(data.columns)}")
    missing = data[args.target].isna()
    if missing.any():
        print(f"tabformer: dropping {int(missing.sum())} row(s) with no {args.target!r}", file=sys.stderr)
        data = data[~missing].reset_index(drop=True)
    y = data.pop(args.target)
    _warn_saved_index(data)
    task = args.task
    if task == "auto":
        task = _task_of(y)
    if task == "classification" and y.nunique() < 2:
        hint = " (--task regression predicts a number)" if pd.api.types.is_numeric_dtype(y) else ""
        value = y.tolist()[0]
        raise CLIError(f"target {args.target!r} holds one value ({value!r}) in every row: a classifier needs 2 classes{hint}")
    if task == "classification" and missing.any() and pd.api.types.is_float_dtype(y) and (y == y.round()).all():
        y = y.astype(np.int64)  # whole-number labels a blank cell made floats: classes 0 and 1, not 0.0 and 1.0
    estimator = (TabFormerRegressor if task == "regression" else TabFormerClassifier)(verbose=0)
    _configure(estimator, settings)
    _fit_with_progress(estimator, data, y.to_numpy(), args.quiet)
    estimator.save(args.out)
    print(f"tabformer: {type(estimator).__name__} ({task}) saved to {args.out}: {_summary(estimator)}", file=sys.stderr)


#: whole-number targets with more distinct values than this (and than 5% of the rows) are
#: counts or amounts, read as a regression: prices, ages, years
MAX_AUTO_CLASSES = 20


def _task_of(y: pd.Series) -> str:
    """``"regression"`` for continuous numbers and for whole numbers of many values, else ``"classification"``."""
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return "classification"
    if type_of_target(y.to_numpy()) == "continuous":
        return "regression"
    distinct = y.nunique()
    if distinct > MAX_AUTO_CLASSES and distinct > 0.05 * len(y):
        print(
            f"tabformer: target {y.name!r} holds {distinct} distinct whole numbers: a regression "
            "(--task classification to treat them as classes)",
            file=sys.stderr,
        )
        return "regression"
    return "classification"


def cmd_pretrain(args):
    settings = parse_settings(args.set)
    data = read_data(args.data, args.image_root, parse_dates=True, texts=fit_text_columns(settings))
    estimator = TabFormerPretrainer(objective=args.objective, verbose=0)
    _configure(estimator, settings)
    _fit_with_progress(estimator, data, None, args.quiet)
    estimator.save(args.out)
    print(f"tabformer: pretrained encoder saved to {args.out}: {_summary(estimator)}", file=sys.stderr)


def cmd_predict(args):
    if args.output and Path(args.output).suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise CLIError(f"--output {args.output}: write .csv or .parquet (got {Path(args.output).suffix or 'no extension'!r})")
    if (args.device or "").startswith("cuda") and not torch.cuda.is_available():  # torch said "Found no NVIDIA driver"
        raise CLIError(f"--device {args.device}: torch finds no CUDA GPU on this machine; use --device cpu")
    estimator = load(args.model, device=args.device)
    if not any(hasattr(estimator, method) for method in ("predict", "transform")):
        what = type(estimator).__name__
        raise CLIError(f"{args.model} holds a {what}, which does not predict; use it as an estimator's encoder=")
    dtypes = getattr(estimator, "feature_dtypes_in_", None)
    kinds, images = category_kinds(estimator), image_columns(estimator)
    tagger = hasattr(estimator, "default_tag_")  # its sentences are words as written: "NA" is a word, not missing
    data = read_data(args.data, args.image_root, dtypes, kinds, images, texts=text_columns(estimator), as_written=tagger)
    names = getattr(estimator, "feature_names_in_", None)
    if isinstance(data, pd.DataFrame) and names is not None:
        extra = [c for c in data.columns if c not in set(names)]
        if len(extra) == len(data.columns):
            raise CLIError(
                f"none of {args.data}'s columns was seen in fit (a file without a header, or not comma-separated?); "
                f"the model reads {list(names)}, the file has {extra[:10]}"
            )
        if extra:
            print(f"tabformer: ignoring column(s) not seen in fit: {extra}", file=sys.stderr)
            data = data.drop(columns=extra)
    out = predictions(estimator, data, args.proba)
    if not isinstance(data, pd.DataFrame):
        out.insert(0, "input", [str(item) for item in data])
    if args.output and Path(args.output).suffix.lower() in (".parquet", ".pq"):
        out.to_parquet(args.output, index=False)
    else:
        out.to_csv(args.output or sys.stdout, index=False)


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"


def cmd_info(args):
    folder = Path(args.model)
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise CLIError(f"{folder} is not a saved tabformer model (no {CONFIG_FILE})")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise CLIError(f"{config_path} is not valid JSON ({error})") from None
    check_header(config, config_path)  # a folder of another library's (a Hugging Face model's) printed "a saved tabformer None"
    if args.json:
        print(json.dumps({k: v for k, v in config.items() if k not in ("tokenizer", "optimizer_param_groups")}, indent=1))
        return
    try:
        print(_describe(config, folder))
    except (KeyError, AttributeError, TypeError, IndexError, ValueError) as error:  # an edited config: a traceback, exit 1
        raise CLIError(
            f"{config_path} is damaged ({type(error).__name__}: {error}); tabformer.load names what it lacks"
        ) from None


def _describe(config: dict, folder: Path) -> str:
    """``tabformer info``'s summary of a saved model's config."""
    lines = [f"{folder}: a saved tabformer {config.get('object')} (format version {config.get('format_version')})"]
    versions = config.get("versions", {})
    lines.append("  saved with: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if "estimator" in config:
        lines.append(f"  estimator:  {config['estimator']['class'].replace(':', '.')}")
        labels = _fitted_classes(config, folder)
        if labels is not None:
            lines.append(f"  classes:    {labels}")
    tokenizer = config.get("tokenizer", {}).get("class", "").replace(":", ".")
    lines.append(f"  tokenizer:  {tokenizer}")
    columns = config.get("columns") or []
    if columns:
        lines.append(f"  columns ({len(columns)}):")
        for column in columns:
            lines.append(f"    {str(column['name']):<24} {str(column['kind']):<12} {column.get('dtype') or ''}")
    module = config.get("module") or {}
    if module:
        width = module["encoders"][0].get("d_model")
        lines.append(
            f"  module:     {module['class'].split(':')[-1]}, {module['n_parameters']:,} parameters, "
            f"{len(module['encoders'])} encoder(s) of d_model {width}, trained on {module['trained_on']}"
        )
    params = config.get("estimator", {}).get("params", {})
    if params:
        text = ", ".join(f"{k}={_shown(v)}" for k, v in params.items())
        lines.append(
            textwrap.fill(text, 110, initial_indent="  parameters: ", subsequent_indent=" " * 14, break_on_hyphens=False)
        )
    for key, label in (("pretrained_weights_", "weights:    fine-tuned from "), ("text_stem_weights_", "text stem:  ")):
        if isinstance((config.get("fitted") or {}).get(key), str):  # the default weights fit started from
            lines.append(f"  {label}{config['fitted'][key]}")
    resolved = (config.get("fitted") or {}).get("resolved_params_")
    if isinstance(resolved, dict) and resolved:  # what the "auto" parameters above resolved to at fit
        text = ", ".join(f"{k}={_shown(v)}" for k, v in resolved.items())
        lines.append(
            textwrap.fill(text, 110, initial_indent="  resolved:   ", subsequent_indent=" " * 14, break_on_hyphens=False)
        )
    metrics = config.get("metrics") or {}
    if metrics:
        lines.append(
            "  metrics:    "
            + ", ".join(
                # null: the value was NaN or infinite (history.json holds it)
                f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {'non-finite' if v is None else v}"
                for k, v in metrics.items()
            )
        )
    files = [folder / name for name in [CONFIG_FILE, *config.get("files", [])]]
    inside = [p for p in files if p.resolve().is_relative_to(folder.resolve())]  # a tampered list may name any file
    lines.append("  files:      " + ", ".join(f"{p.relative_to(folder)} ({_size(p)})" for p in inside if p.is_file()))
    return "\n".join(lines)


def _shown(value) -> str:
    """A saved setting as ``info`` prints it: a class by its name, a tuple as one (it printed the word "tuple")."""
    if isinstance(value, dict) and value.get("__type__") == "tuple":
        items = [_shown(item) for item in value.get("items", [])]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict) and "__type__" in value:
        return str(value.get("name", value["__type__"]))
    return str(value)


def _fitted_classes(config, folder: Path):
    fitted = config.get("fitted", {})
    encoder = fitted.get("label_encoder_", {})
    classes = encoder.get("fitted", {}).get("classes_") if isinstance(encoder, dict) else None
    classes = classes or fitted.get("classes_")
    if not isinstance(classes, dict):
        return None
    if "file" in classes:  # more classes than fit inline in config.json
        from safetensors.numpy import load_file

        path = Reader(folder).path(classes["file"])  # as load: a name outside the folder ("../x") is refused
        try:
            arrays = load_file(path)
        except Exception as error:  # safetensors raises its own error types
            raise CLIError(f"{path} is damaged, not a readable safetensors file ({error}): copy or save it again") from None
        labels = arrays[classes["key"]].tolist()
    else:
        labels = classes.get("data")
    if labels is not None and len(labels) > 20:
        return f"{len(labels)} classes: {labels[:10]} ... {labels[-3:]}"
    return labels


def cmd_export(args):
    estimator = load(args.model, device="cpu")
    if not hasattr(estimator, "export_onnx"):
        raise CLIError(f"{args.model} holds a {type(estimator).__name__}, which has no ONNX export; export an estimator")
    try:
        estimator.export_onnx(args.onnx, opset=args.opset)
    except ImportError as error:
        raise CLIError(str(error)) from None
    print(f"tabformer: {args.model} exported to {args.onnx}", file=sys.stderr)


# ----------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tabformer", description="Fit, run, inspect and export tabformer models.")
    parser.add_argument("--version", action="version", version=f"tabformer {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    commands = parser.add_subparsers(dest="command", required=True)

    fit = commands.add_parser("fit", help="fit a classifier or regressor on a table and save it")
    fit.add_argument("data", help="training data: .csv, .tsv, .parquet, or a folder of them")
    fit.add_argument("--target", required=True, help="the column to predict")
    fit.add_argument("--out", required=True, help="folder to save the fitted model to")
    fit.add_argument(
        "--task",
        choices=["auto", "classification", "regression"],
        default="auto",
        help="auto (default): regression for continuous numbers and many-valued whole numbers, else classification",
    )

    pretrain = commands.add_parser("pretrain", help="pretrain an encoder without labels and save it")
    pretrain.add_argument("data", help="a table, a .txt file (one text per line) or a folder of images")
    pretrain.add_argument("--objective", default="auto", help="pretraining objective: auto (by input), mlm, simclr, masked_cells")
    pretrain.add_argument("--out", required=True, help="folder to save the pretrained model to")

    for sub in (fit, pretrain):
        sub.add_argument("--set", action="append", metavar="KEY=VALUE", help="an estimator parameter (repeatable)")
        sub.add_argument("--quiet", action="store_true", help="no progress bar")

    predict = commands.add_parser("predict", help="predict with a saved model; CSV on stdout")
    predict.add_argument("model", help="a folder written by fit (or by an estimator's save)")
    predict.add_argument("data", help="rows to predict: .csv, .tsv, .parquet, .txt, or a folder")
    predict.add_argument(
        "--proba",
        action="store_true",
        help="classifiers: add one probability column per class; taggers: one per tag, its words' probabilities space-separated",
    )
    predict.add_argument("--output", help="write here (.csv or .parquet) instead of stdout")
    predict.add_argument("--device", help="cpu or cuda (default: where it was saved, if available)")

    for sub in (fit, pretrain, predict):
        sub.add_argument("--image-root", help="folder that relative image paths start from (default: the data's folder)")

    info = commands.add_parser(
        "info", help="describe a saved model: versions, columns, parameters (as passed and as resolved at fit), metrics"
    )
    info.add_argument("model", help="a folder written by fit, pretrain or an estimator's save")
    info.add_argument("--json", action="store_true", help="print config.json's summary as JSON")

    export = commands.add_parser("export", help="export a saved model's module to ONNX")
    export.add_argument("model", help="a folder written by fit, pretrain or an estimator's save")
    export.add_argument("--onnx", required=True, help="the .onnx file to write")
    export.add_argument("--opset", type=int, default=17, help="ONNX opset version (default: 17)")
    return parser


COMMANDS = {"fit": cmd_fit, "predict": cmd_predict, "pretrain": cmd_pretrain, "info": cmd_info, "export": cmd_export}


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad input)."""
    args = build_parser().parse_args(argv)
    formatwarning = warnings.formatwarning  # a warning in one line, as errors are (not "<frozen runpy>:88: ...")
    warnings.formatwarning = lambda message, category, *_: f"tabformer {args.command}: {category.__name__}: {message}\n"
    try:
        COMMANDS[args.command](args)
    except BrokenPipeError:  # `tabformer predict ... | head`: the reader stopped reading, as it meant to
        try:  # no second BrokenPipeError when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except (CLIError, PersistenceError, ValueError, TypeError, OSError, RuntimeError) as error:  # OSError: an unwritable --output
        if args.debug:
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"tabformer {args.command}: error: {message}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = formatwarning
    return 0


if __name__ == "__main__":
    sys.exit(main())
