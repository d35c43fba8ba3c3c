"""Desktop icons with their names: an image + text dataset from two Debian icon themes.

Every icon of the freedesktop.org icon themes Oxygen (KDE) and MATE is a small picture with
a hyphenated name (``media-playback-start``, ``face-smile-big``) filed under one *context*
(``actions``, ``mimetypes``, ``status``...). Classifying the context from the picture and the
name is a task where both halves carry part of the answer in different ways: the names
follow a naming convention (``emblem-*``, ``face-*``, ``application-x-*``) but many are
ambiguous (``folder-open`` is a status, ``folder`` a place), and the pictures share a style
per context (mime types are sheets of paper, emblems are small badges) but differ per theme.

Re-exported by :mod:`tabformer.datasets` (``from tabformer.datasets import load_icons``).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ._files import MissingDatasetError

__all__ = ["load_icons", "ICON_THEMES"]

#: theme -> the folder holding its 48x48 PNG icons, one sub-folder per context
ICON_THEMES = {
    "oxygen": "/usr/share/icons/oxygen/base/48x48",
    "mate": "/usr/share/icons/mate/48x48",
}
ICONS_INSTALL = "apt-get update && apt-get install -y --no-install-recommends oxygen-icon-theme mate-icon-theme"
ICON_SIZE = 48
#: contexts with fewer than 5 icons in the two themes together (``animations``: 3 spinners) are left out
ICON_CONTEXTS = ("actions", "apps", "categories", "devices", "emblems", "emotes", "mimetypes", "places", "status")


def _read_icon(path: str, size: int) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as icon:
        icon = icon.convert("RGBA")
        if icon.size != (size, size):
            icon = icon.resize((size, size), Image.LANCZOS)
        canvas = Image.new("RGBA", icon.size, (255, 255, 255, 255))
        canvas.alpha_composite(icon)
        return np.asarray(canvas.convert("RGB"))


def load_icons(size: int = ICON_SIZE):
    """Desktop icons of the Oxygen and MATE themes: 1,655 pictures + names, 9 contexts.

    Every 48x48 PNG of the two themes that is a file (not a symbolic link: links are aliases,
    the same picture under a second name) in one of the 9 contexts of
    :data:`ICON_CONTEXTS`. 257 names exist in both themes (drawn differently); split on
    ``name`` groups (as ``benchmarks/splits.py``'s ``icons_split`` does) so that a name
    never sits on both sides of a split. The classes are unbalanced: ``actions`` holds
    703 icons, ``emblems`` 24.

    Parameters
    ----------
    size : int, default=48
        Side of the square images in pixels (48 is the files' own size; others are resized
        with Lanczos filtering).

    Returns
    -------
    X : DataFrame of shape (1655, 3)
        ``image``: object column, each cell an ndarray of shape (size, size, 3), uint8 RGB,
        composited on white; ``name``: the icon's name with hyphens and underscores read as
        spaces (``"media playback start"``), ``str``; ``theme``: ``"oxygen"`` or ``"mate"``.
    y : Series of shape (1655,), str
        The context, named ``"context"``.

    Raises
    ------
    MissingDatasetError
        If either theme is not installed (the message names the apt-get command).

    Notes
    -----
    Requires ``apt-get install -y --no-install-recommends oxygen-icon-theme mate-icon-theme``
    (Debian 12: Oxygen 5.103, MATE 1.26; LGPL-3 and GPL/LGPL/CC-BY-SA icons) and Pillow.
    """
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be a positive number of pixels, got {size}")
    rows = []
    for theme, root in ICON_THEMES.items():
        if not os.path.isdir(root):
            raise MissingDatasetError(
                f"the {theme!r} icon theme is not installed ({root} is missing); install it with:  {ICONS_INSTALL}"
            )
        for context in ICON_CONTEXTS:
            folder = os.path.join(root, context)
            if not os.path.isdir(folder):
                continue
            for file in sorted(os.listdir(folder)):
                path = os.path.join(folder, file)
                if file.endswith(".png") and not os.path.islink(path):
                    name = file[: -len(".png")].replace("-", " ").replace("_", " ")
                    rows.append((_read_icon(path, size), name, theme, context))
    table = pd.DataFrame(rows, columns=["image", "name", "theme", "context"])
    return table[["image", "name", "theme"]], table["context"].rename("context")
