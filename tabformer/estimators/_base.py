"""``TabFormerNet``: the skorch net behind every tabformer estimator.

``fit`` checks the parameters once, fits a fresh clone of the tokenizer on ``X`` (so
nothing leaks across CV folds), tokenizes ``X`` once, builds ``module_`` for the fitted
tokenizer and lets skorch train it on the cached token arrays. Subclasses say what the
target is (``_fit_target``), which head reads the encoder (``build_head``) and how
predictions come back; everything else (encoder building and warm starts, the
validation split, schedules, early stopping, batching, the inference loop) lives here.

Parameters route by prefix, skorch style: ``tokenizer__*`` to the tokenizer,
``encoder__*`` to :class:`~tabformer.nn.TransformerEncoder`, ``head__*`` to the head,
and skorch's own (``lr``, ``max_epochs``, ``batch_size``, ``device``, ``optimizer__*``,
``callbacks__*``...).
"""

from __future__ import annotations

import copy
import inspect
import os

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.callbacks import EarlyStopping, LRScheduler
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import Dataset, Subset

from .. import inspection
from .._data import LengthGroupedBatchSampler, TensorDictDataset, collate_batched, sequence_lengths
from .._validation import check_target
from ..callbacks import WarmupLinearLR
from ..export import export_onnx
from ..hub import load_pretrained
from ..nn.encoder import TransformerEncoder
from ..nn.heads import mean_pool
from ..nn.models import PretrainedEncoder
from ..persistence import save_estimator
from ..tokenizers import make_tokenizer
from ._params import SHARED_CONSTRAINTS, check_params

__all__ = ["TabFormerNet", "construct", "num_samples"]

POOLINGS = ("cls", "mean", "cls+mean")


def construct(cls, params: dict, prefix: str, *args):
    """``cls(*args, **params)``, with an error naming any ``prefix__`` key it does not take."""
    accepted = set(inspect.signature(cls).parameters)
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ValueError(
            f"{', '.join(prefix + '__' + key for key in unknown)}: not a parameter of {cls.__name__}; "
            f"valid {prefix}__ parameters: {sorted(accepted - {'d_model', 'n_outputs'})}"
        )
    return cls(*args, **params)


def num_samples(X) -> int:
    """Rows in ``X`` (a DataFrame, an array or a list of samples)."""
    if hasattr(X, "__array__") and not hasattr(X, "shape"):
        X = np.asarray(X)
    if hasattr(X, "shape") and len(X.shape) > 0:
        return int(X.shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"X must be a DataFrame, an array or a list of samples, got {type(X).__name__}") from None


class TabFormerNet(NeuralNet):
    """Base of every tabformer estimator; not meant to be used directly.

    Subclasses declare their own parameters only (``__init__`` adds them and passes the
    rest on) and their ``_parameter_constraints``.
    """

    prefixes_ = NeuralNet.prefixes_ + ["tokenizer", "encoder", "head"]
    _parameter_constraints: dict = SHARED_CONSTRAINTS

    def __init__(
        self,
        tokenizer="auto",
        encoder=None,
        *,
        module,
        criterion,
        optimizer=torch.optim.AdamW,
        lr=1e-3,
        max_epochs=40,
        batch_size=256,
        lr_schedule="cosine",
        train_split="auto",
        validation_fraction=0.1,
        patience=8,
        random_state=None,
        dataset=TensorDictDataset,
        verbose=1,
        device="cpu",
        **kwargs,
    ):
        super().__init__(
            module=module,
            criterion=criterion,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            train_split=train_split,
            dataset=dataset,
            verbose=verbose,
            device=device,
            **kwargs,
        )
        self.tokenizer = tokenizer
        self.encoder = encoder
        self.lr_schedule = lr_schedule
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.random_state = random_state

    def _get_param_names(self):
        # skorch lists every public-looking attribute; its private bookkeeping
        # (_params_to_validate) is not a parameter and must not be cloned or set.
        return [name for name in super()._get_param_names() if not name.startswith("_")]

    @classmethod
    def from_pretrained(cls, path, **params):
        """An unfitted estimator warm-started from a folder: one written by an estimator's
        ``save`` or by ``PretrainedEncoder.save`` (its tokenizer, embedder and encoder; not
        its head or settings, for which see ``tabformer.load``), or a local BERT folder
        (``config.json``, ``model.safetensors``, ``vocab.txt``). Nothing is unpickled.

        Parameters
        ----------
        path : str or os.PathLike
        **params : the estimator's own parameters (``lr``, ``max_epochs``, ``freeze_encoder``...)
        """
        return cls(encoder=load_pretrained(path), **params)

    def save(self, path) -> None:
        """Write the fitted estimator to the folder ``path``: ``config.json``, ``model.safetensors``,
        ``history.json`` and the tokenizer's files, no pickle. ``tabformer.load(path)`` reads it
        back, fitted; ``from_pretrained(path)`` warm-starts a new one. See docs/persistence.md."""
        save_estimator(self, path)

    def export_onnx(self, path, **kwargs):
        """Export the fitted module to ONNX; see :func:`tabformer.export.export_onnx`."""
        return export_onnx(self, path, **kwargs)

    # ------------------------------------------------------------ building
    def _pretrained(self) -> PretrainedEncoder | None:
        if isinstance(self.encoder, PretrainedEncoder):
            return self.encoder
        if isinstance(self.encoder, (str, os.PathLike)) and os.path.isdir(self.encoder):
            loaded = load_pretrained(self.encoder)  # a saved folder or a BERT folder
            return loaded if isinstance(loaded, PretrainedEncoder) else None
        return None

    def build_encoder(self) -> TransformerEncoder:
        """The encoder to train: fresh from ``encoder__*``, or a copy of ``encoder``."""
        pretrained = self._pretrained()
        if pretrained is not None:
            return copy.deepcopy(pretrained.encoder)
        if self.encoder is None:
            params = self.get_params_for("encoder")
            params.setdefault("positions", self.tokenizer_.default_positions)
            return construct(TransformerEncoder, params, "encoder")
        if isinstance(self.encoder, (str, os.PathLike)):
            return load_pretrained(self.encoder)  # a TransformerEncoder.save file (or saved folder)
        if self.get_params_for("encoder"):
            raise ValueError(
                "encoder__* parameters configure a new encoder; they cannot change the "
                f"pretrained encoder passed as `encoder` (got {sorted(self.get_params_for('encoder'))})"
            )
        return copy.deepcopy(self.encoder)

    def build_embedder(self, d_model: int) -> torch.nn.Module:
        """The embedder: a copy of a pretrained encoder's, or a fresh one the tokenizer describes."""
        pretrained = self._pretrained()
        if pretrained is not None:
            return copy.deepcopy(pretrained.embedder)
        return self.tokenizer_.build_embedder(d_model)

    def get_default_callbacks(self):
        callbacks = list(super().get_default_callbacks())
        if self.lr_schedule == "cosine":
            # Decays to zero at max_epochs, so a fit that runs to the end finishes with
            # small, refining steps instead of stopping mid-stride at the peak rate.
            callbacks.append(("lr_scheduler", LRScheduler(policy=CosineAnnealingLR, T_max=self.max_epochs)))
        elif self.lr_schedule == "warmup_linear":
            callbacks.append(("lr_scheduler", WarmupLinearLR()))
        # Any other value is refused by fit (check_params), not here: skorch builds
        # callbacks inside set_params, and sklearn wants set_params to store, not validate.
        if self.patience is not None and self._uses_validation():
            callbacks.append(
                ("early_stopping", EarlyStopping(monitor="valid_loss", patience=self.patience, load_best=True, sink=self._sink))
            )
        return callbacks

    def _sink(self, message):
        if self.verbose:
            print(message)

    def _uses_validation(self) -> bool:
        if self.train_split == "auto":
            return bool(self.validation_fraction)
        return self.train_split is not None

    # ------------------------------------------------------------- data
    def get_split_datasets(self, X, y=None, **fit_params):
        if self.train_split != "auto":
            return super().get_split_datasets(X, y, **fit_params)
        dataset = self.get_dataset(X, y)
        if not self.validation_fraction:
            return dataset, None
        indices = np.arange(len(dataset))
        train_idx, valid_idx = train_test_split(
            indices, test_size=self.validation_fraction, random_state=self._split_seed(), stratify=self._stratify_labels(y)
        )
        return Subset(dataset, train_idx), Subset(dataset, valid_idx)

    def _stratify_labels(self, y):
        return None

    def _split_seed(self):
        return None if self.random_state is None else int(self.random_state) + 1

    def get_iterator(self, dataset, training=False):
        prefix = "iterator_train" if training else "iterator_valid"
        kwargs = self.get_params_for(prefix)
        kwargs.setdefault("batch_size", self.batch_size)
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        group_by_length = kwargs.pop("group_by_length", False)
        if training:
            kwargs.setdefault("shuffle", True)
            if self._drop_last_in_training() and len(dataset) > kwargs["batch_size"]:
                kwargs.setdefault("drop_last", True)
            if group_by_length:
                # iterator_train__group_by_length=True: batches of similar text length.
                window = 50 if group_by_length is True else int(group_by_length)
                kwargs["batch_sampler"] = LengthGroupedBatchSampler(
                    sequence_lengths(dataset), kwargs.pop("batch_size"), kwargs.pop("drop_last", False), window
                )
                kwargs.pop("shuffle")
        inner = dataset.dataset if isinstance(dataset, Subset) else dataset
        if isinstance(inner, TensorDictDataset):
            kwargs.setdefault("collate_fn", collate_batched)
        iterator = self.iterator_train if training else self.iterator_valid
        return iterator(dataset, **kwargs)

    def _drop_last_in_training(self) -> bool:
        """Whether training should skip the last, smaller batch (subclasses decide)."""
        return False

    def tokenize(self, X) -> dict:
        """Tokenize ``X`` with the fitted tokenizer (dict of numpy arrays, one row per sample)."""
        check_is_fitted(self, "tokenizer_")
        if isinstance(X, Dataset):
            # skorch's scoring callbacks call predict on the already tokenized validation set.
            return X
        return self.tokenizer_.transform(X)

    # -------------------------------------------------------------- fit
    def fit(self, X, y=None, **fit_params):
        """Fit the tokenizer on ``X``, tokenize once, and train the network.

        Parameters
        ----------
        X : DataFrame, array-like, list of str or images, n_samples rows
        y : array-like of shape (n_samples,) (or (n_samples, n_targets) for regression)
        **fit_params : passed to skorch's ``fit``.

        Returns
        -------
        self
        """
        check_params(self)
        if "sample_weight" in fit_params:
            # skorch would forward an unknown fit parameter to the module's forward, where
            # it could be silently ignored; refuse it instead.
            raise ValueError(f"{type(self).__name__} does not support sample_weight yet; resample the rows instead")
        if self.warm_start and getattr(self, "initialized_", False) and hasattr(self, "tokenizer_"):
            return self.partial_fit(X, y, **fit_params)
        # Cheap checks on y come before the (possibly slow) tokenizer fit.
        y_encoded = self._fit_target(y, num_samples(X))
        with self._seeded():
            batch = self._fit_tokenizer(X)
            self._train_new_module(batch, y_encoded, **fit_params)
        return self

    def _fit_tokenizer(self, X) -> dict:
        """Fit ``tokenizer_`` on ``X`` (or reuse a pretrained encoder's) and return X's tokens."""
        pretrained = self._pretrained()
        if pretrained is not None:
            # The embedder's ids belong to the pretrained tokenizer: reuse it, fitted.
            self.tokenizer_ = copy.deepcopy(pretrained.tokenizer)
        else:
            self.tokenizer_ = make_tokenizer(self.tokenizer, X, self.get_params_for("tokenizer")).fit(X)
        dtypes = getattr(X, "dtypes", None)
        self.feature_dtypes_in_ = {str(c): str(t) for c, t in dtypes.items()} if hasattr(dtypes, "items") else None
        return self.tokenizer_.transform(X)

    def _train_new_module(self, data, y, **fit_params):
        """Build a fresh module for the fitted tokenizer and train it on ``data`` (tokens or a dataset)."""
        self.n_features_in_ = getattr(self.tokenizer_, "n_features_in_", None)
        names = getattr(self.tokenizer_, "feature_names_in_", None)
        if names is not None:
            self.feature_names_in_ = names
        elif "feature_names_in_" in vars(self):
            del self.feature_names_in_
        self.initialize()
        NeuralNet.partial_fit(self, data, y, _routing_method="fit", **fit_params)

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Continue training on ``X`` with the fitted tokenizer (fits everything if unfitted)."""
        if not hasattr(self, "tokenizer_") or not self.initialized_:
            return self.fit(X, y, **fit_params)
        data, y_encoded = self._continued_data(X, y)
        with self._seeded():
            NeuralNet.partial_fit(self, data, y_encoded, **fit_params)
        return self

    def _continued_data(self, X, y):
        """``(tokens or dataset, encoded target)`` of ``X, y`` for a continued fit."""
        batch = self.tokenize(X)
        n_rows = len(next(iter(batch.values())))
        return batch, self._encode_target(check_target(y, n_rows, numeric=self._numeric_target))

    def _seeded(self):
        """Fork the global torch RNG and seed it, so a fit is reproducible and leaves
        the caller's random state alone."""
        fork = torch.random.fork_rng(devices=[])
        if self.random_state is None:
            return fork
        seed = int(self.random_state)

        class _Seeded:
            def __enter__(inner):
                fork.__enter__()
                torch.manual_seed(seed)

            def __exit__(inner, *exc):
                return fork.__exit__(*exc)

        return _Seeded()

    # -------------------------------------------------------- inference
    def iter_batches(self, X, forward):
        """The one inference loop: ``forward(inputs)`` on each batch of ``X``, in eval mode.

        Parameters
        ----------
        X : dict of arrays (tokens), a torch Dataset, or raw input for ``tokenize``
        forward : callable
            ``forward(inputs)`` with ``inputs`` a dict of tensors on ``device``, each of
            shape (batch, ...); its return value is yielded as is.

        Yields
        ------
        what ``forward`` returns, batch by batch, in row order, computed without gradients.
        """
        check_is_fitted(self, "module_")
        tokens = X if isinstance(X, (dict, Dataset)) else self.tokenize(X)
        dataset = tokens if isinstance(tokens, Dataset) else TensorDictDataset(tokens)
        self.module_.eval()
        with torch.no_grad():
            for inputs, _ in self.get_iterator(dataset, training=False):
                yield forward({key: value.to(self.device) for key, value in inputs.items()})

    def forward_features(self, X, return_attention: bool = False, pooling: str = "cls"):
        """Encoder output for ``X``: one embedding per row.

        Parameters
        ----------
        X : input accepted by ``predict``, or its tokens (dict of arrays)
        return_attention : bool, default=False
            Also return a list (one per layer) of arrays of shape
            (n_samples, n_heads, 1+T, 1+T).
        pooling : {"cls", "mean", "cls+mean"}, default="cls"
            The CLS output, the mean of the CLS and real-token outputs, or both side by side.

        Returns
        -------
        ndarray of shape (n_samples, d_model), or (n_samples, 2 * d_model) for ``"cls+mean"``
        """
        check_is_fitted(self, "tokenizer_")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if pooling != "cls" and not hasattr(self.module_, "encode"):
            raise ValueError(f"pooling={pooling!r} needs a single token sequence; {type(self.module_).__name__} has none")

        def features(inputs):
            if pooling == "cls":
                out, mask = self.module_.forward_features(return_attention=return_attention, **inputs), None
            else:
                out, mask = self.module_.encode(return_attention, **inputs)
            hidden, attention = out if return_attention else (out, None)
            parts = [hidden[:, 0]] if pooling != "mean" else []
            if pooling != "cls":
                parts.append(mean_pool(hidden, mask))
            maps = [a.float().cpu().numpy() for a in attention] if return_attention else None
            return torch.cat(parts, dim=1).float().cpu().numpy(), maps

        outputs = list(self.iter_batches(X, features))
        embeddings = np.concatenate([embedding for embedding, _ in outputs])
        if not return_attention:
            return embeddings
        return embeddings, [np.concatenate([maps[layer] for _, maps in outputs]) for layer in range(len(outputs[0][1]))]

    def explain(self, X, layer="all", level="token"):
        """CLS attention over the input tokens, averaged over heads, as a tidy DataFrame.

        See :func:`tabformer.inspection.explain`, which this calls.
        """
        return inspection.explain(self, X, layer=layer, level=level)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tokenizer_") and bool(getattr(self, "initialized_", False)) and hasattr(self, "module_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = self.random_state is None
        return tags

    def check_data(self, X, y):
        # Targets are validated and encoded in fit (_fit_target); skorch's inference of
        # classes from the encoded ints would only shadow ours.
        pass
