"""Per-word sequence labelling (BIO named entities, POS...) behind sklearn ``predict``.

Words are split into WordPiece sub-words; the first sub-word of a word carries the
word's label and the rest are ignored by the loss (``ignore_index``), as in BERT's NER
fine-tuning. ``predict`` reads the first sub-word's prediction back, so it returns
exactly one tag per input word. ``score`` is entity-level F1 with the CoNLL-2000
``conlleval`` chunk rules (:func:`tabformer.metrics.entity_f1`) for BIO, BIOES and BILOU tags.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._warnings import user_stacklevel
from ..metrics import entity_f1, tag_scheme
from ..nn.heads import IGNORE_INDEX, TokenClassificationHead, TokenCrossEntropy
from ._base import construct
from ._collapse import spread_indices
from ._docs import (
    CLASS_WEIGHT_DOC,
    FINE_TUNING_PARAMS_DOC,
    RECIPES_NOTES_DOC,
    RESOLVED_ATTRIBUTES_DOC,
    SHARED_PARAMS_DOC,
)
from ._finetuning import FineTuningNet
from ._params import (
    CLASS_WEIGHT_CONSTRAINT,
    check_fit_params,
    check_params,
)
from ._sentences import check_class_types, check_sentence_weights, check_sentences, check_tag_types, warn_cut_words
from ._weights import check_sample_weight, with_weights

__all__ = ["TabFormerTagger"]


def _warn_if_scored_by_accuracy(classes) -> None:
    """At fit: a tag set that looks like entity tags but is not BIO, BIOES or BILOU is scored by word accuracy; say which."""
    if tag_scheme(classes) is not None:
        return
    # "0" for "O", "b-per" for "B-PER", "B-" without a type: one such tag and score reads words, not entities
    if not any(re.match(r"[BIESLU]-", str(tag), re.IGNORECASE) for tag in classes):
        return  # POS tags, integer tags: word accuracy is what they are scored by
    stray = [str(tag) for tag in classes if tag_scheme(["O", tag]) is None]
    warnings.warn(
        f"score will be word accuracy, not entity F1: tag(s) {stray[:10]}{' ...' if len(stray) > 10 else ''} are not BIO, "
        "BIOES or BILOU tags ('O', or B-, I-, E-, S-, L-, U- before a type; case matters); "
        "fix them in y to score entities",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


class TabFormerTagger(FineTuningNet):
    __doc__ = (
        """Transformer sequence labeller: one tag per word (e.g. BIO named entities).

    ``X`` is a list of sentences, each a list of words; ``y`` a list of tag lists of the
    same lengths (a Series, or a one-column DataFrame, of such lists reads the same).
    Words are split into WordPiece sub-words; the first sub-word of each word is trained
    on and read for its tag. With ``tokenizer="auto"`` (the default) and
    all-MiniLM-L6-v2 installed, the tagger fine-tunes it (CoNLL-2003, 2,000 sentences,
    validation entity F1 0.71 against 0.49 from scratch); ``tokenizer="wordpiece"``
    trains a cased vocabulary and encoder from scratch. Words cut off by ``tokenizer__max_length``
    (a ``UserWarning`` says how many, at fit and predict) or made of characters the normaliser
    removes get ``default_tag_``.
    """
        + SHARED_PARAMS_DOC
        + FINE_TUNING_PARAMS_DOC
        + CLASS_WEIGHT_DOC.replace("the classes", "the tags")
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_tags,)
        Tags seen in fit, sorted (as str); the first ``partial_fit(classes=...)`` fixes them to those it lists,
        so that a first batch may lack tags later ones bring, as with scikit-learn's incremental learners.
    default_tag_ : str
        Tag predicted for words without a sub-word: ``"O"`` if a tag, else the most frequent in fit.
"""
        + RESOLVED_ATTRIBUTES_DOC
        + """    tokenizer_, module_, history_ : as the classifier
"""
        + RECIPES_NOTES_DOC
        + """
    Examples
    --------
    >>> from tabformer import TabFormerTagger
    >>> sentences = [["Alice", "visits", "Paris"], ["Bob", "stays"]]
    >>> tags = [["B-PER", "O", "B-LOC"], ["B-PER", "O"]]
    >>> tagger = TabFormerTagger(max_epochs=2, verbose=0).fit(sentences, tags)  # doctest: +SKIP
    >>> [len(t) for t in tagger.predict(sentences)]                             # doctest: +SKIP
    [3, 2]
    """
    )

    _recipe_role = "tagger"
    _head_class = TokenClassificationHead

    _parameter_constraints = {**FineTuningNet._parameter_constraints, "class_weight": CLASS_WEIGHT_CONSTRAINT}

    def __init__(self, tokenizer="auto", encoder=None, *, criterion=TokenCrossEntropy, class_weight=None, **kwargs):
        super().__init__(tokenizer, encoder, criterion=criterion, **kwargs)
        self.class_weight = class_weight

    def build_head(self, d_model):
        """A :class:`~tabformer.nn.heads.TokenClassificationHead` configured by ``head__*``.

        Parameters
        ----------
        d_model : int
            Width of the encoder output ``(B, 1+T, D)`` it reads.

        Returns
        -------
        TokenClassificationHead
            Logits of shape (B, T, n_tags), one row per sub-word (CLS dropped).
        """
        return construct(TokenClassificationHead, self.get_params_for("head"), "head", d_model, len(self.classes_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # fit needs the tags (sklearn's checks and meta-estimators read this)
        tags.input_tags.allow_nan = False  # a NaN word is refused, naming it
        return tags

    def _check_tags(self, X, y):
        if y is None:
            raise ValueError("TabFormerTagger requires y to be passed, but the target y is None: one list of tags per sentence")
        tags = check_sentences(y, "y")
        if len(tags) != len(X):
            raise ValueError(f"X has {len(X)} sentences but y has {len(tags)} tag lists")
        for i, (words, row) in enumerate(zip(X, tags)):
            if len(words) != len(row):
                raise ValueError(f"sentence {i} has {len(words)} words but {len(row)} tags")
            for j, tag in enumerate(row):
                # str() would make a missing tag the class "None" or "nan", learnt and predicted.
                if tag is None or tag is pd.NA or (isinstance(tag, float) and tag != tag):
                    raise ValueError(f"y[{i}][{j}] (the tag of word {words[j]!r}) is missing ({tag!r}); every word needs a tag")
        check_tag_types(X, tags)
        return tags

    def _align(self, batch, tags) -> np.ndarray:
        """Word tags -> sub-word label ids (first sub-word only), shape (n, T)."""
        index = {tag: i for i, tag in enumerate(self.classes_)}
        word_ids = batch["word_ids"]
        labels = np.full(word_ids.shape, IGNORE_INDEX, dtype=np.int64)
        first = word_ids >= 0
        first[:, 1:] &= word_ids[:, 1:] != word_ids[:, :-1]
        for i, j in zip(*np.nonzero(first)):
            labels[i, j] = index[str(tags[i][word_ids[i, j]])]  # classes_ are str: int tags too
        return labels

    def fit(self, X, y=None, sample_weight=None, **fit_params):
        """Fit the tokenizer, align word tags to sub-words, and train.

        Parameters
        ----------
        X : list of n lists of str (words)
        y : list of n lists of str (tags), ``len(y[i]) == len(X[i])``
        sample_weight : array-like of shape (n,), default=None
            Weight of each sentence: every word of it counts that many times in the loss.

        Returns
        -------
        self
        """
        check_params(self)
        check_fit_params(self, fit_params)
        check_sentence_weights(sample_weight)
        if self._continues():
            return self.partial_fit(X, y, sample_weight=sample_weight, **fit_params)
        X = check_sentences(X)
        weights = check_sample_weight(sample_weight, len(X))
        tags = self._check_tags(X, y)
        flat = [tag for row in tags for tag in row]
        if not flat:
            raise ValueError("y holds no tags at all (every sentence is empty)")
        seen, counts = np.unique(np.asarray(flat, dtype=object).astype(str), return_counts=True)
        declared = self.__dict__.get("_classes_for_fit")  # partial_fit's first classes= fixes classes_, as scikit-learn's
        values = seen if declared is None else np.unique(np.asarray(list(declared), dtype=object).astype(str))
        unknown = sorted(set(seen.tolist()) - set(values.tolist()))
        if unknown:
            raise ValueError(f"y holds tag(s) {unknown} that classes={values.tolist()} does not list")
        if len(values) < 2:  # as scikit-learn's classifiers: one tag trains nothing, every word would get it
            where = "y has" if declared is None else "classes lists"
            raise ValueError(f"{where} only 1 tag ({str(values[0])!r}); a tagger needs samples of at least 2 classes (tags)")
        self.classes_ = values
        _warn_if_scored_by_accuracy(values)
        self.default_tag_ = "O" if "O" in values else str(seen[counts.argmax()])
        self._start_accelerator()
        with self._seeded():
            batch = self._fit_tokenizer(X)
            warn_cut_words(self, X, batch, "fit")
            labels = self._align(batch, tags)
            self._train_new_module(with_weights(batch, self._row_weights(labels, weights)), labels, **fit_params)
        self._warn_if_one_tag(batch, labels)
        return self

    def _warn_if_one_tag(self, batch, labels) -> None:
        """``ConvergenceWarning`` when the kept weights give one tag to every word of the training sentences checked.

        Up to 256 sentences holding a tag other than ``default_tag_`` are checked, and 256 spread over
        the rest: a tagger that answers ``"O"`` everywhere scores an entity F1 of 0, as the classifier
        that answers one class warns (docs/defaults.md).
        """
        default = int(np.flatnonzero(self.classes_ == self.default_tag_)[0])
        varied = np.flatnonzero(((labels != IGNORE_INDEX) & (labels != default)).any(axis=1))
        every = np.arange(len(labels))
        rows = np.union1d(varied[spread_indices(len(varied), 256)], every[spread_indices(len(every), 256)])
        sample, targets, answers = {key: value[rows] for key, value in batch.items()}, labels[rows], set()

        def best(inputs):
            length = max(int(inputs["attention_mask"].sum(dim=1).max()), 1)
            return self.module_(**{key: value[:, :length] for key, value in inputs.items()}).argmax(-1).cpu().numpy()

        start = 0
        for chosen in self.iter_batches(sample, best):
            truth = targets[start : start + len(chosen), : chosen.shape[1]]
            answers.update(chosen[truth != IGNORE_INDEX].tolist())
            start += len(chosen)
        if len(answers) == 1:
            warnings.warn(
                f"{type(self).__name__} predicts one tag ({str(self.classes_[answers.pop()])!r}) for every word of the "
                f"{len(rows)} training sentences it was checked on: it has not learned beyond a constant answer; try "
                f"more epochs (max_epochs; resolved: {self._setting('max_epochs')}), another learning rate (lr; resolved: "
                f"{self._setting('lr')}), or class_weight='balanced'",
                ConvergenceWarning,
                stacklevel=user_stacklevel(),
            )

    def partial_fit(self, X, y=None, classes=None, sample_weight=None, **fit_params):
        """Continue training on ``X`` with the fitted tokenizer and tags (fits everything if unfitted).

        Parameters
        ----------
        X : list of n lists of str (words)
        y : list of n lists of str (tags), ``len(y[i]) == len(X[i])``
        classes : array-like of tags, default=None
            Every tag y may hold; the first call fixes ``classes_`` to them, a later one must list the same.
            Tags are compared as ``classes_`` holds them, as str (``[1, 2]`` is ``["1", "2"]``).
        sample_weight : array-like of shape (n,), default=None
            Weight of each sentence.

        Returns
        -------
        self
        """
        check_sentence_weights(sample_weight)
        if classes is not None:  # a later call compares them with classes_, which are the tags' str
            check_class_types(list(classes))
            classes = np.unique(np.asarray(list(classes), dtype=object).astype(str))
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight, **fit_params)

    def _row_weights(self, labels, sample_weight, continued=False):
        """Per sub-word weights (n, T): the sentence's weight times its tag's, 0 where no tag is read."""
        if sample_weight is None and self.class_weight is None:
            return None
        labelled = labels != IGNORE_INDEX
        weights = labelled * (1.0 if sample_weight is None else np.asarray(sample_weight)[:, None])
        if self.class_weight is not None:
            # classes_ are the tags' str, so a dict keyed by the tags as given ({1: 2.0}) is read the same way
            given = self.class_weight if isinstance(self.class_weight, str) else {str(k): w for k, w in self.class_weight.items()}
            per_tag = self._class_weights(given, labels[labelled], continued)
            weights = weights * np.where(labelled, per_tag[np.where(labelled, labels, 0)], 0.0)
        return weights

    def _continued_data(self, X, y):
        """Tokens of ``X`` and the sub-word labels of ``y``, with the fitted tag set."""
        X = check_sentences(X)
        tags = self._check_tags(X, y)
        unknown = {str(t) for row in tags for t in row} - set(self.classes_)  # classes_ are str: int tags too
        if unknown:
            raise ValueError(f"y holds tag(s) {sorted(unknown)} not seen in fit; tags are {self.classes_.tolist()}")
        batch = self.tokenize(X)
        warn_cut_words(self, X, batch, "fit")
        return batch, self._align(batch, tags)

    def predict_subword_proba(self, X):
        """Tag probabilities per sub-word position, shape (n, T, n_tags), plus the batch.

        What :meth:`predict_proba` reads each word's row from (its first sub-word's).

        Parameters
        ----------
        X : list of n lists of str

        Returns
        -------
        proba : ndarray of float32, shape (n_samples, T, n_tags)
            0 at padding positions (``batch["attention_mask"] == 0``); float32, not the classifiers'
            float64: one row per sub-word of every sentence is T times a classifier's output.
        batch : dict from the tokenizer (its ``word_ids`` map positions to words, -1 at [SEP] and padding)
        """
        check_is_fitted(self)
        batch = self.tokenize(check_sentences(X))
        proba = np.zeros(batch["input_ids"].shape + (len(self.classes_),), dtype=np.float32)

        def tag_probabilities(inputs):
            # Cut the columns that are padding in the whole mini-batch: the data is
            # padded to its longest sentence, most batches are far shorter.
            length = max(int(inputs["attention_mask"].sum(dim=1).max()), 1)
            logits = self.module_(**{key: value[:, :length] for key, value in inputs.items()})
            # A sentence's padding positions read 0, as past its batch's longest sentence: their
            # softmax depended on which sentences shared the batch (0.78 apart at another batch size).
            padding = inputs["attention_mask"][:, :length, None] == 0
            return torch.softmax(logits.float(), dim=-1).masked_fill(padding, 0.0).cpu().numpy()

        start = 0
        for rows in self.iter_batches(batch, tag_probabilities):
            proba[start : start + len(rows), : rows.shape[1]] = rows
            start += len(rows)
        return proba, batch

    def predict_proba(self, X):
        """Tag probabilities per word, in ``classes_`` order: those :meth:`predict` takes the argmax of.

        A word's row is the softmax at its first sub-word (:meth:`predict_subword_proba` gives every
        sub-word's). A word with no sub-word read, cut off by ``tokenizer__max_length`` (a ``UserWarning``
        says how many) or made of characters the normaliser removes, gets probability 1 on ``default_tag_``,
        the tag ``predict`` gives it.

        Parameters
        ----------
        X : list of n lists of str

        Returns
        -------
        list of n ndarrays of float64, array i of shape (len(X[i]), n_tags)
            Each row sums to 1; ``classes_[proba[i].argmax(axis=1)]`` is ``predict(X)[i]``.
        """
        check_is_fitted(self)
        X = check_sentences(X)
        proba, batch = self.predict_subword_proba(X)
        warn_cut_words(self, X, batch, "predict")
        default = np.eye(len(self.classes_))[list(self.classes_).index(self.default_tag_)]
        out = []
        for i, words in enumerate(X):
            rows = np.tile(default, (len(words), 1))
            read, first = np.unique(batch["word_ids"][i], return_index=True)  # each word's first sub-word
            rows[read[read >= 0]] = proba[i, first[read >= 0]]
            out.append(rows)
        return out

    def predict(self, X):
        """One tag per word: the most probable tag of its first sub-word, each word on its own.

        The argmax of :meth:`predict_proba`; a word no sub-word is read for gets ``default_tag_``.
        Tags are not repaired into valid IOB2: ``I-X`` may follow ``O`` or another type.
        ``score`` (:func:`~tabformer.metrics.bio_entities`) reads such an ``I-X`` as conlleval does, as the
        start of an entity.

        Parameters
        ----------
        X : list of n lists of str

        Returns
        -------
        list of n lists of str, ``len(result[i]) == len(X[i])``
        """
        return [self.classes_[rows.argmax(axis=1)].tolist() for rows in self.predict_proba(X)]

    def score(self, X, y, sample_weight=None):
        """Entity-level F1 (CoNLL) for BIO, BIOES and BILOU tags; for any other tag set, the share of words tagged right.

        Parameters
        ----------
        X : list of n lists of str (words)
        y : list of n lists of tags, ``len(y[i]) == len(X[i])``
        sample_weight : None
            Not supported.

        Returns
        -------
        score : float
            :func:`~tabformer.metrics.entity_f1` when every fitted tag is ``"O"``,
            ``"B-<type>"`` or ``"I-<type>"`` (BIO), or also ``"E-<type>"``, ``"S-<type>"`` (BIOES, IOBES),
            or ``"L-<type>"``, ``"U-<type>"`` (BILOU) (:func:`~tabformer.metrics.tag_scheme`); else word
            accuracy (POS tags, integer tags), which is what a grid search over a POS tagger
            needs. A tag set almost BIO (``"0"`` for ``"O"``, ``"b-per"``) gets word accuracy
            too: fit warns, naming the tags.
        """
        if sample_weight is not None:
            raise ValueError("TabFormerTagger.score does not support sample_weight")
        check_is_fitted(self)
        X = check_sentences(X)
        # y read as fit reads it: a one-column DataFrame of tag lists was one "sentence", its column name.
        tags = self._check_tags(X, y)
        given = {str(tag) for row in tags for tag in row}
        if given and given.isdisjoint(self.classes_):  # float tags 1.0 on a fit of int 1: every word scored wrong
            raise ValueError(
                f"y holds none of the tags fit saw: y has {sorted(given)[:5]}, fit saw {self.classes_.tolist()[:5]}. Tags "
                "are compared as str, so 1.0 is not 1: pass y's tags as fit's were (e.g. int, not float)"
            )
        predicted = self.predict(X)
        if tag_scheme(self.classes_) is not None:
            return entity_f1(tags, predicted)
        truth = [str(tag) for row in tags for tag in row]
        if not truth:
            raise ValueError("y holds no tags at all (every sentence is empty): there is nothing to score")
        return float(np.mean(np.asarray(truth, dtype=object) == np.asarray([t for row in predicted for t in row], dtype=object)))
