"""Pretraining on unlabeled mixed rows: objective="simclr" and "mlm" with a MixedTokenizer."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.nn.heads import IGNORE_INDEX
from tabformer.pretraining.losses import masked_token_loss
from tabformer.pretraining.mlm import MixedMaskedTokenHead
from tabformer.pretraining.simclr import ContrastiveHead
from tabformer.pretraining.views import MixedMaskedTokenDataset, MixedTwoViewDataset
from tabformer.tokenizers import MixedTokenizer, PatchTokenizer, WordPieceTokenizer
from tabformer.tokenizers.base import MASK, PAD, SEP
from tabformer.tokenizers.tabular import MISSING_ID, UNSEEN_ID

N = 64
WORDS = ["red", "blue", "green", "wool", "silk", "cotton", "hat", "shirt", "scarf", "big", "small", "soft", "warm", "light"]


def make_rows(n=N, seed=0):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, rng.integers(3, 9))) for _ in range(n)]
    texts[3] = texts[10] = None
    images = [(rng.random((8, 8)) * 255).astype(np.uint8) for _ in range(n)]
    images[5] = None
    frame = pd.DataFrame(
        {
            "title": texts,
            "photo": images,
            "brand": rng.choice(["a", "b", "c", "d"], n),
            "size": rng.choice(["s", "m", "l"], n),
            "price": rng.normal(size=n),
            "weight": rng.uniform(100, 200, n),
        }
    )
    frame.loc[[1, 9], "brand"] = None
    frame.loc[[7, 20], "price"] = np.nan
    return frame


X = make_rows()
TOKENIZER = dict(max_categories=10, text=WordPieceTokenizer(vocab_size=60, min_frequency=1), image=PatchTokenizer(patch_size=4))
TINY = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    batch_size=16,
    verbose=0,
    random_state=0,
    tokenizer=MixedTokenizer(**TOKENIZER),
)


@pytest.fixture(scope="module")
def fitted():
    tokenizer = MixedTokenizer(**TOKENIZER).fit(X)
    assert tokenizer.column_kinds_ == {
        "title": "text",
        "photo": "image",
        "brand": "categorical",
        "size": "categorical",
        "price": "numeric",
        "weight": "numeric",
    }
    return tokenizer, {k: torch.as_tensor(v) for k, v in tokenizer.transform(X).items()}


def identity(sub):
    return lambda image: image


def both_views(dataset, indices=range(N)):
    out, _ = dataset.__getitems__(list(indices))
    return [{k[len(v) + 1 :]: t for k, t in out.items() if k.startswith(v + "/")} for v in ("view1", "view2")]


def unchanged(view, batch, prefixes):
    return all(torch.equal(view[k], batch[k]) for k in batch if k.startswith(prefixes))


# ----------------------------------------------------------------- SimCLR views
def test_table_corruption_draws_each_cell_from_its_own_column(fitted):
    tokenizer, batch = fitted
    dataset = MixedTwoViewDataset(
        batch, tokenizer, identity, corruption_rate=0.5, text_mask_prob=0.0, text_crop=1.0, random_state=0
    )
    for view in both_views(dataset):
        assert set(view) == set(batch)
        assert unchanged(view, batch, ("text:", "image:"))  # the table corruption touches the table only
        for name in ("cat_ids", "num_values"):
            new, old = view[f"table/{name}"], batch[f"table/{name}"]
            changed = new != old
            assert 0.1 < changed.float().mean() < 0.5  # ~ rate 0.5 minus donors holding the same value
            for j in range(old.shape[1]):
                assert set(new[:, j].tolist()) <= set(old[:, j].tolist())  # values from the same column
        # a numeric cell moves with its missing flag: (value, missing) pairs come from one donor row
        for j in range(batch["table/num_values"].shape[1]):
            pairs = set(zip(batch["table/num_values"][:, j].tolist(), batch["table/num_missing"][:, j].tolist()))
            assert set(zip(view["table/num_values"][:, j].tolist(), view["table/num_missing"][:, j].tolist())) <= pairs
    assert any(view["table/num_missing"].sum() != batch["table/num_missing"].sum() for view in both_views(dataset))


def test_text_masking_touches_only_real_words(fitted):
    tokenizer, batch = fitted
    dataset = MixedTwoViewDataset(
        batch, tokenizer, identity, corruption_rate=0.0, text_mask_prob=0.3, text_crop=1.0, random_state=0
    )
    ids, mask = batch["text:title/input_ids"], batch["text:title/attention_mask"]
    for view in both_views(dataset):
        assert unchanged(view, batch, ("table/", "image:", "text:title/attention_mask", "text:title/present"))
        new = view["text:title/input_ids"]
        changed = new != ids
        assert changed.any() and (new[changed] == MASK).all()
        assert (mask & (ids >= 5))[changed].all()  # never [SEP], [PAD] or another special token
        assert not changed[~batch["text:title/present"]].any()
    first, second = both_views(dataset)
    assert not torch.equal(first["text:title/input_ids"], second["text:title/input_ids"])  # independent views


def test_text_crop_keeps_a_contiguous_span_then_sep(fitted):
    tokenizer, batch = fitted
    dataset = MixedTwoViewDataset(
        batch, tokenizer, identity, corruption_rate=0.0, text_mask_prob=0.0, text_crop=0.5, random_state=0
    )
    ids, mask = batch["text:title/input_ids"], batch["text:title/attention_mask"]
    shorter = inner = 0
    for view in both_views(dataset):
        assert unchanged(view, batch, ("table/", "image:", "text:title/present"))
        new, new_mask = view["text:title/input_ids"], view["text:title/attention_mask"]
        assert new.shape == ids.shape and (view["text:title/token_type_ids"] == 0).all()
        for i in range(N):
            words = ids[i][mask[i]].tolist()[:-1]
            kept = new[i][new_mask[i]].tolist()
            length = len(kept)
            assert new_mask[i][:length].all() and not new_mask[i][length:].any()  # real tokens first
            assert (new[i][length:] == PAD).all() and kept[-1] == SEP
            span = kept[:-1]
            assert len(span) >= int(np.ceil(0.5 * len(words)))
            starts = [s for s in range(len(words) - len(span) + 1) if words[s : s + len(span)] == span]
            assert starts
            shorter += len(span) < len(words)
            inner += 0 not in starts
    assert shorter > N // 2 and inner > N // 4  # random lengths and random offsets


def test_image_views_differ_and_absent_images_stay_masked(fitted):
    tokenizer, batch = fitted
    dataset = MixedTwoViewDataset(batch, tokenizer, corruption_rate=0.0, text_mask_prob=0.0, text_crop=1.0, random_state=0)
    first, second = both_views(dataset)
    pixels, present = batch["image:photo/pixels"], batch["image:photo/present"]
    for view in (first, second):
        assert unchanged(view, batch, ("table/", "text:", "image:photo/present"))
        assert view["image:photo/pixels"].shape == pixels.shape
        assert view["image:photo/pixels"].min() >= 0 and view["image:photo/pixels"].max() <= 1
        assert torch.equal(view["image:photo/pixels"][~present], pixels[~present])
    differ = (first["image:photo/pixels"] - second["image:photo/pixels"]).abs().flatten(1).amax(1) > 1e-3
    assert differ[present].float().mean() > 0.9 and not differ[~present].any()


def test_views_are_reproducible_and_leave_global_rngs_alone(fitted):
    tokenizer, batch = fitted
    runs = []
    for global_seed, seed in ((1, 0), (2, 0), (1, 1)):
        torch.manual_seed(global_seed)  # views depend on random_state only, not on the global RNG...
        torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()[1].copy()
        runs.append(both_views(MixedTwoViewDataset(batch, tokenizer, random_state=seed), range(20)))
        # ...which they leave as they found it
        assert torch.equal(torch.get_rng_state(), torch_state) and np.array_equal(np.random.get_state()[1], numpy_state)
    same = [all(torch.equal(a[k], b[k]) for k in a) for a, b in zip(runs[0], runs[1])]
    other = [all(torch.equal(a[k], b[k]) for k in a) for a, b in zip(runs[0], runs[2])]
    assert all(same) and not any(other)


def test_invalid_rates_raise(fitted):
    tokenizer, batch = fitted
    with pytest.raises(ValueError, match="text_crop"):
        MixedTwoViewDataset(batch, tokenizer, text_crop=0.0)
    with pytest.raises(ValueError, match="corruption_rate"):
        MixedTwoViewDataset(batch, tokenizer, corruption_rate=1.5)


# -------------------------------------------------------------------- MLM masks
def test_mlm_masks_words_and_categorical_cells_only(fitted):
    tokenizer, batch = fitted
    dataset = MixedMaskedTokenDataset(batch, tokenizer, random_state=0)
    ids, mask, present = batch["text:title/input_ids"], batch["text:title/attention_mask"], batch["text:title/present"]
    cats = batch["table/cat_ids"]
    text_rate, cell_rate = [], []
    for _ in range(10):
        out, _ = dataset.__getitems__(list(range(N)))
        assert unchanged(out, batch, ("image:", "table/num_", "text:title/attention_mask", "text:title/present"))
        labels = out["text:title/mlm_labels"]
        chosen = labels != IGNORE_INDEX
        assert (mask & (ids >= 5) & present[:, None])[chosen].all() and torch.equal(labels[chosen], ids[chosen])
        assert torch.equal(out["text:title/input_ids"][~chosen], ids[~chosen])
        text_rate.append(chosen.sum() / (mask & (ids >= 5) & present[:, None]).sum())
        cell_labels = out["table/mlm_labels"]
        masked = cell_labels != IGNORE_INDEX
        assert (out["table/cat_ids"][masked] == UNSEEN_ID).all() and torch.equal(cell_labels[masked], cats[masked])
        assert torch.equal(out["table/cat_ids"][~masked], cats[~masked])
        assert not masked[cats == MISSING_ID].any()  # a missing cell has nothing to predict
        cell_rate.append(masked.sum() / (cats >= 2).sum())
    assert 0.1 < np.mean(text_rate) < 0.2 and 0.1 < np.mean(cell_rate) < 0.2


def test_mlm_loss_averages_words_and_cells_by_count(fitted):
    tokenizer, batch = fitted
    torch.manual_seed(0)
    embedder = tokenizer.build_embedder(16)
    from tabformer.nn.encoder import TransformerEncoder

    head = MixedMaskedTokenHead(embedder, 16).eval()
    encoder = TransformerEncoder(d_model=16, n_heads=2, n_layers=1).eval()
    embedder.eval()

    def module(**inputs):
        return masked_token_loss(head(embedder, encoder, **inputs))

    out, _ = MixedMaskedTokenDataset(batch, tokenizer, random_state=0).__getitems__(list(range(N)))
    ignore = torch.full_like
    text_only = dict(out, **{"table/mlm_labels": ignore(out["table/mlm_labels"], IGNORE_INDEX)})
    cells_only = dict(out, **{"text:title/mlm_labels": ignore(out["text:title/mlm_labels"], IGNORE_INDEX)})
    n_text = int((out["text:title/mlm_labels"] != IGNORE_INDEX).sum())
    n_cells = int((out["table/mlm_labels"] != IGNORE_INDEX).sum())
    with torch.no_grad():
        both, words, cells = module(**out), module(**text_only), module(**cells_only)
        assert n_text > 0 and n_cells > 0 and np.isfinite(float(both))
        torch.testing.assert_close(both, (n_text * words + n_cells * cells) / (n_text + n_cells))
        # a masked cell is scored against its own column's categories only: ~log(#categories) at init
        assert float(cells) < np.log(4) + 0.5
        allowed = head.allowed_g2  # the table is the third sub-tokenizer (text, image, table)
        head.heads["g2"].bias[~allowed.any(0)] += 100.0  # other rows (missing/unseen ids) cannot be predicted
        torch.testing.assert_close(module(**cells_only), cells)
        head.heads["g2"].bias[allowed[0]] += torch.linspace(0, 5, int(allowed[0].sum()))
        assert not torch.allclose(module(**cells_only), cells)


def test_mlm_on_rows_without_text_or_categories_raises():
    frame = X[["photo", "price"]]
    tokenizer = MixedTokenizer(**TOKENIZER).fit(frame)
    with pytest.raises(ValueError, match="neither"):
        MixedMaskedTokenDataset(tokenizer.transform(frame), tokenizer)


# ------------------------------------------------------------- the pretrainer
@pytest.mark.parametrize(
    "objective,extra",
    [
        ("simclr", dict(objective__blur_p=0.0, objective__corruption_rate=0.4, validation_fraction=None)),
        ("mlm", dict(validation_fraction=0.2)),
    ],
)
def test_pretrain_then_transform_and_warm_start(objective, extra):
    pre = TabFormerPretrainer(objective=objective, max_epochs=12, lr=3e-3, lr_schedule=None, **TINY, **extra).fit(X)
    assert isinstance(pre.module_.head, ContrastiveHead if objective == "simclr" else MixedMaskedTokenHead)
    if objective == "simclr":
        assert pre.objective_.corruption_rate == 0.4  # objective__* reaches the objective
    losses = pre.history_[:, "train_loss"]
    assert np.isfinite(losses).all() and np.mean(losses[-3:]) < 0.95 * losses[0]
    embeddings = pre.transform(X)
    assert embeddings.shape == (N, 16) and np.isfinite(embeddings).all()
    # lr=0: the classifier's fit leaves the warm-started weights exactly as pretrained
    y = np.where(X["price"].fillna(0) > 0, "up", "down")
    clf = TabFormerClassifier(encoder=pre.encoder_, lr=0.0, max_epochs=1, verbose=0, random_state=0).fit(X, y)
    assert isinstance(clf.tokenizer_, MixedTokenizer)
    for mine, theirs in ((clf.module_.embedder, pre.module_.embedder), (clf.module_.encoder, pre.module_.encoder)):
        state = theirs.state_dict()
        assert all(torch.equal(state[k], v) for k, v in mine.state_dict().items())
        assert all(a.data_ptr() != b.data_ptr() for a, b in zip(mine.parameters(), theirs.parameters()))
    assert clf.predict(X[:4]).shape == (4,)
