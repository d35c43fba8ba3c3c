"""The parameters every tabformer estimator shares: declared once, documented once, and
checked once at ``fit`` (scikit-learn's ``_parameter_constraints`` style), so a bad value
is refused with a message naming the parameter, the value and what is allowed.

The estimators' ``__init__`` only store; sklearn's ``set_params`` and ``clone`` must
never validate (``check_set_params``), which is why every check lives here.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval, Options, StrOptions, validate_parameter_constraints

from ..nn.encoder import TransformerEncoder
from ..nn.models import PretrainedEncoder
from ..tokenizers import BaseTokenizer

__all__ = ["SHARED_CONSTRAINTS", "FINE_TUNING_CONSTRAINTS", "SHARED_PARAMS_DOC", "check_params"]

SHARED_CONSTRAINTS = {
    # Names are checked against the registry when the tokenizer is made (make_tokenizer),
    # so a tokenizer registered after import is accepted.
    "tokenizer": [str, BaseTokenizer],
    "encoder": [None, TransformerEncoder, PretrainedEncoder, str, os.PathLike],
    "lr": [Interval(Real, 0, None, closed="left")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
    "lr_schedule": [StrOptions({"cosine", "warmup_linear"}), None],
    "train_split": [StrOptions({"auto"}), callable, None],
    "validation_fraction": [Interval(Real, 0, 1, closed="left"), None],
    "patience": [Interval(Integral, 1, None, closed="left"), None],
    "random_state": [Interval(Integral, 0, 2**32 - 1, closed="both"), None],
    "verbose": ["verbose"],
    "device": [str, torch.device],
}

#: what the classifier, regressor and tagger add: they warm-start and may freeze parts
FINE_TUNING_CONSTRAINTS = {
    **SHARED_CONSTRAINTS,
    "freeze_encoder": ["boolean"],
    "freeze_embedder": ["boolean"],
}


def check_params(estimator) -> None:
    """Validate ``estimator``'s own parameters against its ``_parameter_constraints``.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError (a ``ValueError`` and a
    ``TypeError``) naming the parameter, the allowed values and the value given.
    """
    params = {name: getattr(estimator, name) for name in estimator._parameter_constraints}
    validate_parameter_constraints(estimator._parameter_constraints, params, caller_name=type(estimator).__name__)


SHARED_PARAMS_DOC = """
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
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh :class:`~tabformer.nn.TransformerEncoder` from the
        ``encoder__*`` parameters (``encoder__d_model``, ``encoder__n_layers``,
        ``encoder__n_heads``, ``encoder__dropout``...). A module, or a file written by
        its ``save``, warm-starts from its weights (copied, never modified). A
        :class:`~tabformer.nn.PretrainedEncoder` also brings its fitted tokenizer
        and embedder, which ``fit`` then reuses instead of fitting new ones.
    lr : float, default=1e-3
        AdamW learning rate (``optimizer__weight_decay`` etc. route to AdamW).
    max_epochs : int, default=40
        Upper bound; early stopping may end training sooner.
    lr_schedule : {"cosine", "warmup_linear"} or None, default="cosine"
        ``"cosine"``: per-epoch cosine decay of the learning rate from ``lr`` to 0 over
        ``max_epochs``. ``"warmup_linear"``: BERT's fine-tuning schedule, per batch: a
        linear climb over the first 10% of the steps (``callbacks__lr_scheduler__warmup``),
        then a linear fall to 0 (:class:`~tabformer.callbacks.WarmupLinearLR`).
        ``None``: constant ``lr``.
    batch_size : int, default=256
        Rows per training step (``-1``: all rows). Text:
        ``iterator_train__group_by_length=True`` batches rows of similar length
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
        Routed parameters: ``tokenizer__*``, ``encoder__*``, ``head__*`` and skorch's
        (``optimizer__*``, ``callbacks__*``, ``iterator_train__*``...).
"""

FINE_TUNING_PARAMS_DOC = """    freeze_encoder : bool, default=False
        Keep the encoder fixed (no gradient, eval mode): the embedder and the head train.
    freeze_embedder : bool, default=False
        Keep the embedder fixed (word, patch and cell embeddings, positions; no
        gradient, eval mode, so ``tokenizer__token_dropout`` is off). It needs a
        :class:`~tabformer.nn.PretrainedEncoder` as ``encoder``, whose embedder it
        keeps. Alone, the encoder and head train over fixed embeddings; with
        ``freeze_encoder=True`` only the head trains (a linear probe).
"""

FUSION_PARAM_DOC = """    fusion : {"early", "late"} or int, default="early"
        Mixed inputs only. ``"early"``: every column's tokens form one sequence in one
        encoder, so words, patches and cells attend to each other. An int ``k``: mid
        fusion (Nagrani et al., 2021), the same sequence and encoder, but in its first
        ``k`` layers tokens attend within their own modality only (CLS reads all);
        ``0`` is early fusion. ``"late"``: one encoder per modality (same
        ``encoder__*`` settings), CLS vectors concatenated and projected before the
        head; the usual multimodal baseline.
"""
