"""What every tabformer estimator shares: the skorch-net mixin behind the classifier,
regressor, tagger and pretrainer (tokenizer fitting, encoder building and warm starts,
validation split, schedules, early stopping, batching, features and explanations).

Each estimator is a skorch net whose ``fit`` first fits a fresh clone of its tokenizer
on ``X`` (so nothing leaks across CV folds), tokenizes ``X`` once, and then lets skorch
train ``TabFormerModel(embedder, encoder, head)`` on the cached token arrays.

Parameters route by prefix, skorch style: ``tokenizer__*`` to the tokenizer,
``encoder__*`` to :class:`~tabformer.encoder.TransformerEncoder`, ``head__*`` to the head,
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
from torch.utils.data import Subset

from .._data import LengthGroupedBatchSampler, TensorDictDataset, collate_batched, sequence_lengths
from .._validation import check_target
from ..callbacks import WarmupLinearLR
from ..hub import load_pretrained
from ..nn.encoder import TransformerEncoder
from ..nn.heads import mean_pool
from ..nn.models import LateFusionModel, PretrainedEncoder
from ..tokenizers import make_tokenizer


_SHARED_PARAMS_DOC = """
    Parameters
    ----------
    tokenizer : str or tokenizer instance, default="auto"
        How ``X`` becomes tokens. ``"auto"`` picks by input: images (arrays, PIL images
        or image paths) -> :class:`~tabformer.tokenizers.PatchTokenizer`; a list or
        Series of str -> :class:`~tabformer.tokenizers.WordPieceTokenizer`; a DataFrame
        with text or image columns -> :class:`~tabformer.tokenizers.MixedTokenizer`
        (kinds detected per column, see its ``column_kinds_``); any other table ->
        :class:`~tabformer.tokenizers.TabularTokenizer`. Or a name (``"tabular"``,
        ``"wordpiece"``, ``"patch"``, ``"mixed"``) or an unfitted tokenizer instance
        (cloned at every ``fit``). Set its parameters with ``tokenizer__<name>``.
    fusion : {"early", "late"} or int, default="early"
        Mixed inputs only. ``"early"``: every column's tokens form one sequence in one
        encoder, so words, patches and cells attend to each other. An int ``k``: mid
        fusion (Nagrani et al., 2021), the same sequence and encoder, but in its first
        ``k`` layers tokens attend within their own modality only (CLS reads all);
        ``0`` is early fusion. ``"late"``: one encoder per modality (same
        ``encoder__*`` settings), CLS vectors concatenated and projected before the
        head; the usual multimodal baseline.
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh :class:`~tabformer.encoder.TransformerEncoder` from the
        ``encoder__*`` parameters (``encoder__d_model``, ``encoder__n_layers``,
        ``encoder__n_heads``, ``encoder__dropout``...). A module, or a file written by
        its ``save``, warm-starts from its weights (copied, never modified). A
        :class:`~tabformer.model.PretrainedEncoder` also brings its fitted tokenizer
        and embedder, which ``fit`` then reuses instead of fitting new ones.
    freeze_encoder : bool, default=False
        Keep the encoder fixed (no gradient, eval mode): the embedder and the head train.
    freeze_embedder : bool, default=False
        Keep the embedder fixed (word, patch and cell embeddings, positions; no
        gradient, eval mode, so ``tokenizer__token_dropout`` is off). It needs a
        :class:`~tabformer.model.PretrainedEncoder` as ``encoder``, whose embedder it
        keeps. Alone, the encoder and head train over fixed embeddings; with
        ``freeze_encoder=True`` only the head trains (a linear probe).
    lr : float, default=1e-3
        AdamW learning rate (``optimizer__weight_decay`` etc. route to AdamW).
    max_epochs : int, default=40
        Upper bound; early stopping may end training sooner.
    lr_schedule : {"cosine", "warmup_linear"} or None, default="cosine"
        ``"cosine"``: per-epoch cosine decay of the learning rate from ``lr`` to 0 over
        ``max_epochs``. ``"warmup_linear"``: BERT's fine-tuning schedule, per batch: a
        linear climb over the first 10% of the steps (``callbacks__lr_scheduler__warmup``),
        then a linear fall to 0 (:class:`~tabformer.schedules.WarmupLinearLR`).
        ``None``: constant ``lr``.
    batch_size : int, default=256
        Text: ``iterator_train__group_by_length=True`` batches rows of similar length
        together (shuffled within windows of 50 batches, or of the int given), so less
        of each training batch is padding; fits of short, varied texts run faster.
    validation_fraction : float or None, default=0.1
        Share of the training rows held out (stratified for classifiers) to monitor
        ``valid_loss`` for early stopping. Ignored when ``train_split`` is given.
        ``None`` or ``0`` trains on every row for ``max_epochs``.
    patience : int or None, default=8
        Stop after this many epochs without a better ``valid_loss``, and restore the
        best weights. ``None`` disables early stopping. Classifiers can watch accuracy
        instead: ``callbacks__early_stopping__monitor="valid_acc"`` with
        ``callbacks__early_stopping__lower_is_better=False``.
    random_state : int or None, default=None
        Seeds weight init, shuffling and the validation split: CPU fits repeat exactly,
        except that a WordPiece vocabulary trained in ``fit`` can differ in a few tokens
        between fits (an upstream ``tokenizers`` issue; ``tokenizer__vocab_file`` with a
        vocabulary saved by ``save_vocabulary`` is exact).
    train_split : "auto", callable or None, default="auto"
        skorch's ``train_split``; ``"auto"`` uses ``validation_fraction``.
    device : str, default="cpu"
        ``"cuda"`` trains on a GPU through skorch.
    verbose : int, default=1
        1 prints skorch's per-epoch table; 0 is silent.
    **kwargs
        Routed parameters: ``tokenizer__*``, ``encoder__*``, ``head__*`` and skorch's.
"""


def _construct(cls, params: dict, prefix: str, *args):
    """``cls(*args, **params)``, with an error naming any ``prefix__`` key it does not take."""
    accepted = set(inspect.signature(cls).parameters)
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ValueError(
            f"{', '.join(prefix + '__' + key for key in unknown)}: not a parameter of {cls.__name__}; "
            f"valid {prefix}__ parameters: {sorted(accepted - {'d_model', 'n_outputs'})}"
        )
    return cls(*args, **params)


class _TabFormerNet:
    """Behaviour shared by the classifier, regressor, tagger and pretrainer (a mixin before skorch's net)."""

    prefixes_ = NeuralNet.prefixes_ + ["tokenizer", "encoder", "head"]
    # The default for estimators pickled before the parameter existed (get_params, clone).
    freeze_embedder = False

    def _get_param_names(self):
        # skorch lists every public-looking attribute; its private bookkeeping
        # (_params_to_validate) is not a parameter and must not be cloned or set.
        return [name for name in super()._get_param_names() if not name.startswith("_")]

    @classmethod
    def from_pretrained(cls, path, **params):
        """An unfitted estimator warm-started from a local BERT folder (``config.json``,
        ``model.safetensors``, ``vocab.txt``) or a ``PretrainedEncoder.save`` file;
        ``params`` are the estimator's own (``lr``, ``max_epochs``, ``freeze_encoder``...)."""
        return cls(encoder=load_pretrained(path), **params)

    # ------------------------------------------------------------ building
    def _encoder_params(self) -> dict:
        params = self.get_params_for("encoder")
        params.setdefault("positions", getattr(self.tokenizer_, "default_positions", None))
        return params

    def _pretrained(self) -> PretrainedEncoder | None:
        if isinstance(self.encoder, PretrainedEncoder):
            return self.encoder
        if isinstance(self.encoder, (str, os.PathLike)):
            saved = torch.load(self.encoder, map_location="cpu", weights_only=False)
            if isinstance(saved, dict) and saved.get("format") == "tabformer.PretrainedEncoder/1":
                return saved["model"]
        return None

    def build_encoder(self) -> TransformerEncoder:
        """The encoder to train: fresh from ``encoder__*``, or a copy of ``encoder``."""
        pretrained = self._pretrained()
        if pretrained is not None:
            return copy.deepcopy(pretrained.encoder)
        if self.encoder is None:
            return _construct(TransformerEncoder, self._encoder_params(), "encoder")
        if isinstance(self.encoder, (str, os.PathLike)):
            return TransformerEncoder.load(self.encoder)
        if isinstance(self.encoder, TransformerEncoder):
            if self.get_params_for("encoder"):
                raise ValueError(
                    "encoder__* parameters configure a new encoder; they cannot change the "
                    f"pretrained encoder passed as `encoder` (got {sorted(self.get_params_for('encoder'))})"
                )
            return copy.deepcopy(self.encoder)
        raise TypeError(
            f"encoder must be None, a TransformerEncoder or a path to one, got {type(self.encoder).__name__}"
        )

    def initialize_module(self):
        encoder = self.build_encoder()
        pretrained = self._pretrained()
        if pretrained is not None:
            embedder = copy.deepcopy(pretrained.embedder)
        elif self.freeze_embedder and self._fusion() != "late":  # late fusion has its own error below
            raise ValueError(
                "freeze_embedder=True would freeze a randomly initialised embedder; it needs a PretrainedEncoder "
                f"as `encoder` (e.g. TabFormerPretrainer().fit(X).encoder_ or load_bert(path)), got {type(self.encoder).__name__}"
            )
        else:
            embedder = self.tokenizer_.build_embedder(encoder.d_model)
        head = self.build_head(encoder.d_model)
        if self._fusion() == "late":
            if pretrained is not None or self.encoder is not None:
                raise ValueError("fusion='late' builds one fresh encoder per modality; warm-starting from `encoder` needs fusion='early'")
            for name in ("freeze_encoder", "freeze_embedder"):
                if getattr(self, name):
                    raise ValueError(f"{name}=True with fusion='late' would freeze randomly initialised weights; it needs fusion='early' and a pretrained `encoder`")
            if not hasattr(embedder, "forward_groups"):
                raise ValueError(
                    f"fusion='late' needs mixed inputs (a MixedTokenizer); the tokenizer is {type(self.tokenizer_).__name__}"
                )
            encoders = [encoder] + [self.build_encoder() for _ in embedder.group_names[1:]]
            self.module_ = LateFusionModel(embedder, encoders, head, freeze_encoder=self.freeze_encoder)
            return self
        kwargs = self.get_params_for("module")
        if isinstance(self._fusion(), int) and self._fusion() > 0:
            kwargs["fusion_layer"] = self._fusion()
        if self.freeze_embedder:
            kwargs["freeze_embedder"] = True
        self.module_ = self.module(embedder=embedder, encoder=encoder, head=head, freeze_encoder=self.freeze_encoder, **kwargs)
        return self

    def _fusion(self):
        fusion = getattr(self, "fusion", "early")  # subclasses without the parameter: early
        if isinstance(fusion, (int, np.integer)) and not isinstance(fusion, bool) and fusion >= 0:
            return int(fusion)
        if fusion not in ("early", "late"):
            raise ValueError(f"fusion must be 'early', 'late' or a number of modality-only layers (int >= 0), got {fusion!r}")
        return fusion

    def get_default_callbacks(self):
        callbacks = list(super().get_default_callbacks())
        lr_schedule = getattr(self, "lr_schedule", None)  # subclasses without the parameter: constant lr
        if lr_schedule == "cosine":
            # Decays to zero at max_epochs, so a fit that runs to the end finishes with
            # small, refining steps instead of stopping mid-stride at the peak rate.
            callbacks.append(("lr_scheduler", LRScheduler(policy=CosineAnnealingLR, T_max=self.max_epochs)))
        elif lr_schedule == "warmup_linear":
            callbacks.append(("lr_scheduler", WarmupLinearLR()))
        # Any other value is refused by fit (_check_lr_schedule), not here: skorch builds
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
        stratify = self._stratify_labels(y)
        train_idx, valid_idx = train_test_split(
            indices, test_size=self.validation_fraction, random_state=self._split_seed(), stratify=stratify
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
        if self._is_batched(dataset):
            kwargs.setdefault("collate_fn", collate_batched)
        iterator = self.iterator_train if training else self.iterator_valid
        return iterator(dataset, **kwargs)

    def _drop_last_in_training(self) -> bool:
        """Whether training should skip the last, smaller batch (subclasses decide)."""
        return False

    @staticmethod
    def _is_batched(dataset) -> bool:
        inner = dataset.dataset if isinstance(dataset, Subset) else dataset
        return isinstance(inner, TensorDictDataset)

    def tokenize(self, X) -> dict:
        """Tokenize ``X`` with the fitted tokenizer (dict of numpy arrays)."""
        check_is_fitted(self, "tokenizer_")
        if isinstance(X, torch.utils.data.Dataset):
            # skorch's scoring callbacks call predict on the already tokenized validation set.
            return X
        return self.tokenizer_.transform(X)

    # -------------------------------------------------------------- fit
    def fit(self, X, y=None, **fit_params):
        """Fit the tokenizer on ``X``, tokenize once, and train the network.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) (or (n_samples, n_targets) for regression)
        **fit_params : passed to skorch's ``fit``.

        Returns
        -------
        self
        """
        _reject_sample_weight(self, fit_params)
        if self.warm_start and getattr(self, "initialized_", False) and hasattr(self, "tokenizer_"):
            return self.partial_fit(X, y, **fit_params)
        # Cheap checks on y come before the (possibly slow) tokenizer fit.
        y_encoded = self._fit_target(y, _num_samples(X))
        with self._seeded():
            batch = self._fit_tokenizer(X)
            self._train_new_module(batch, y_encoded, **fit_params)
        return self

    def _check_lr_schedule(self):
        lr_schedule = getattr(self, "lr_schedule", None)
        if lr_schedule not in ("cosine", "warmup_linear", None):
            raise ValueError(f"lr_schedule must be 'cosine', 'warmup_linear' or None, got {lr_schedule!r}")

    def _fit_tokenizer(self, X) -> dict:
        """Fit ``tokenizer_`` on ``X`` (or reuse a pretrained encoder's) and return X's tokens.

        Every fit calls it first, so settings are checked here, before the slow part."""
        self._check_lr_schedule()
        pretrained = self._pretrained()
        if pretrained is not None:
            # The embedder's ids belong to the pretrained tokenizer: reuse it, fitted.
            self.tokenizer_ = copy.deepcopy(pretrained.tokenizer)
        else:
            self.tokenizer_ = make_tokenizer(self.tokenizer, X, self.get_params_for("tokenizer")).fit(X)
        return self.tokenizer_.transform(X)

    def _train_new_module(self, data, y, **fit_params):
        """Build a fresh module for the fitted tokenizer and train it on ``data`` (tokens or a dataset)."""
        self._record_features()
        self.initialize()
        NeuralNet.partial_fit(self, data, y, _routing_method="fit", **fit_params)

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Continue training on ``X`` with the fitted tokenizer (fits everything if unfitted)."""
        if not hasattr(self, "tokenizer_") or not self.initialized_:
            return self.fit(X, y, **fit_params)
        batch = self.tokenize(X)
        y_encoded = self._encode_target(check_target(y, self._n_rows(batch), numeric=self._numeric_target))
        with self._seeded():
            NeuralNet.partial_fit(self, batch, y_encoded, **fit_params)
        return self

    @staticmethod
    def _n_rows(batch: dict) -> int:
        return len(next(iter(batch.values())))

    def _record_features(self):
        self.n_features_in_ = getattr(self.tokenizer_, "n_features_in_", None)
        names = getattr(self.tokenizer_, "feature_names_in_", None)
        if names is not None:
            self.feature_names_in_ = names
        elif "feature_names_in_" in vars(self):
            del self.feature_names_in_

    def _seeded(self):
        """Fork the global torch RNG and seed it, so a fit is reproducible and leaves
        the caller's random state alone."""
        fork = torch.random.fork_rng(devices=[])
        if self.random_state is None:
            return fork

        class _Seeded:
            def __enter__(inner):
                fork.__enter__()
                torch.manual_seed(int(self.random_state))

            def __exit__(inner, *exc):
                return fork.__exit__(*exc)

        return _Seeded()

    def forward_features(self, X, return_attention: bool = False, pooling: str = "cls"):
        """Encoder output for ``X``: one embedding per row, shape (n_samples, d_model).

        ``pooling``: ``"cls"`` (the CLS output), ``"mean"`` (mean of the CLS and real-token
        outputs) or ``"cls+mean"`` (both side by side, (n_samples, 2 * d_model)). With
        ``return_attention=True`` also returns a list (one per layer) of arrays of
        shape (n_samples, n_heads, 1+T, 1+T).
        """
        check_is_fitted(self, "tokenizer_")
        if pooling not in ("cls", "mean", "cls+mean"):
            raise ValueError(f"pooling must be 'cls', 'mean' or 'cls+mean', got {pooling!r}")
        if pooling != "cls" and not hasattr(self.module_, "_encode"):
            raise ValueError(f"pooling={pooling!r} needs a single token sequence; {type(self.module_).__name__} has none")
        dataset = TensorDictDataset(X if isinstance(X, dict) else self.tokenize(X))
        self.module_.eval()
        cls, maps = [], []
        with torch.no_grad():
            for batch, _ in self.get_iterator(dataset, training=False):
                batch = {k: v.to(self.device) for k, v in batch.items()}
                if pooling == "cls":
                    out, mask = self.module_.forward_features(return_attention=return_attention, **batch), None
                else:
                    out, mask = self.module_._encode(return_attention, **batch)
                hidden, attention = out if return_attention else (out, None)
                parts = [hidden[:, 0]] if pooling != "mean" else []
                if pooling != "cls":
                    parts.append(mean_pool(hidden, mask))
                cls.append(torch.cat(parts, dim=1).float().cpu().numpy())
                if return_attention:
                    maps.append([a.float().cpu().numpy() for a in attention])
        embeddings = np.concatenate(cls)
        if not return_attention:
            return embeddings
        return embeddings, [np.concatenate([m[layer] for m in maps]) for layer in range(len(maps[0]))]

    def explain(self, X, layer="all", level="token") -> "pd.DataFrame":
        """CLS attention over the input tokens, averaged over heads, as a tidy DataFrame.

        Parameters
        ----------
        X : input accepted by ``predict``
        layer : "all" or int
            Which encoder layer(s) to report (0-based; negative counts from the last).
        level : {"token", "column"}, default="token"
            ``"token"``: one row per token. ``"column"``: attention summed over the tokens
            of each input column (all words of a text column, all patches of an image).

        Returns
        -------
        DataFrame with columns ``row`` (position in ``X``), ``layer``, ``token`` (index
        in the token sequence, CLS excluded), ``column`` (input column the token comes
        from; ``"text"``/``"image"`` for a single text or image input), ``label`` (a
        sub-word, a patch ``"r{i}c{j}"`` or a table column) and ``attention`` (weight the
        CLS query puts on that token; padding and masked segments excluded, so one row
        and layer sums to at most 1, the rest being CLS's self-attention). With
        ``level="column"``: ``row``, ``layer``, ``column``, ``n_tokens``, ``attention``.
        """
        import pandas as pd

        check_is_fitted(self)
        if level not in ("token", "column"):
            raise ValueError(f"level must be 'token' or 'column', got {level!r}")
        batch = self.tokenize(X)
        _, maps = self.forward_features(batch, return_attention=True)
        described = self.tokenizer_.describe_tokens(batch)
        if layer == "all":
            layers = range(len(maps))
        elif isinstance(layer, (int, np.integer)) and -len(maps) <= layer < len(maps):
            layers = [int(layer) % len(maps)]
        else:
            raise ValueError(f"layer must be 'all' or an int in [{-len(maps)}, {len(maps) - 1}], got {layer!r}")
        records = []
        for layer_index in layers:
            cls_rows = maps[layer_index].mean(axis=1)[:, 0, 1:]  # (n, T): CLS query, heads averaged
            for row, tokens in enumerate(described):
                for position, column, label in tokens:
                    records.append((row, layer_index, position, column, label, float(cls_rows[row, position])))
        frame = pd.DataFrame.from_records(records, columns=["row", "layer", "token", "column", "label", "attention"])
        if level == "column":
            frame = (
                frame.groupby(["row", "layer", "column"], sort=False)
                .agg(n_tokens=("token", "size"), attention=("attention", "sum"))
                .reset_index()
            )
        return frame

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tokenizer_") and bool(getattr(self, "initialized_", False)) and hasattr(self, "module_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = self.random_state is None
        return tags


def _num_samples(X) -> int:
    if hasattr(X, "__array__") and not hasattr(X, "shape"):
        X = np.asarray(X)
    if hasattr(X, "shape") and len(getattr(X, "shape")) > 0:
        return int(X.shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"X must be a DataFrame, an array or a list of samples, got {type(X).__name__}") from None


def _reject_sample_weight(net, fit_params):
    # skorch would forward an unknown fit parameter to the module's forward, where it
    # could be silently ignored; refuse it instead.
    if "sample_weight" in fit_params:
        raise ValueError(f"{type(net).__name__} does not support sample_weight yet; resample the rows instead")


def _init_shared(net, tokenizer, encoder, freeze_encoder, freeze_embedder, validation_fraction, patience, random_state, lr_schedule, fusion="early"):
    net.lr_schedule = lr_schedule
    net.fusion = fusion
    net.tokenizer = tokenizer
    net.encoder = encoder
    net.freeze_encoder = freeze_encoder
    net.freeze_embedder = freeze_embedder
    net.validation_fraction = validation_fraction
    net.patience = patience
    net.random_state = random_state
