"""Read pretrained encoders from local files (no hub): tabformer's own saved folders and
``TransformerEncoder.save`` files, and Hugging Face text folders (:mod:`tabformer.hub_text`:
BERT, RoBERTa, DistilBERT, ELECTRA).
"""

from __future__ import annotations

import os

from .hub_text import FAMILIES, load_text_folder
from .nn.encoder import TransformerEncoder
from .nn.models import PretrainedEncoder
from .nn.safe_load import UnsafeFileError
from .persistence import is_saved_folder, load_encoder

__all__ = ["load_bert", "load_pretrained", "load_text_folder", "FAMILIES"]

#: the name this loader had when it read BERT folders only; every family of FAMILIES loads
load_bert = load_text_folder


def load_pretrained(path, **kwargs) -> PretrainedEncoder | TransformerEncoder:
    """The encoder at ``path``, read without unpickling anything.

    - a folder written by ``PretrainedEncoder.save`` or by an estimator's ``save``: its
      :class:`PretrainedEncoder` (tokenizer, embedder, encoder);
    - a local Hugging Face text folder: :func:`load_text_folder` (``kwargs`` go to it);
    - a file written by ``TransformerEncoder.save``: that :class:`TransformerEncoder`.

    Files written by ``PretrainedEncoder.save`` in tabformer 0.1 were pickles; they are
    refused with an error that says so.

    Parameters
    ----------
    path : str or os.PathLike
        A saved folder, a Hugging Face text folder or a ``TransformerEncoder.save`` file.
    **kwargs
        :func:`load_text_folder`'s options (``max_length``, ``dropout``, ``attention_dropout``);
        BERT folders only, anything else with options raises ``TypeError``.

    Returns
    -------
    PretrainedEncoder or TransformerEncoder
    """
    folder = os.fspath(path)
    if os.path.isdir(folder):
        if is_saved_folder(folder):
            if kwargs:
                raise TypeError(f"options {sorted(kwargs)} only apply to BERT folders")
            return load_encoder(folder)
        return load_text_folder(folder, **kwargs)
    if kwargs:
        raise TypeError(f"options {sorted(kwargs)} only apply to BERT folders")
    if not os.path.exists(folder):
        raise FileNotFoundError(
            f"{folder!r} does not exist (expected a saved folder, a BERT folder or a TransformerEncoder.save file)"
        )
    try:
        return TransformerEncoder.load(folder)
    except UnsafeFileError as error:
        raise UnsafeFileError(
            f"{error} Note: PretrainedEncoder.save files of tabformer 0.1 were such pickles; re-save a trusted one "
            "as a folder with PretrainedEncoder.save(folder)."
        ) from None
