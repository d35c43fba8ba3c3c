"""Follow-ups of a review: each case answered wrongly, or failed, before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer._stream import open_source

pq = pytest.importorskip("pyarrow.parquet")

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    """A hive-partitioned Parquet folder: ``year`` lives in the folder names only."""
    root = tmp_path_factory.mktemp("hive") / "data"
    rng = np.random.default_rng(0)
    for year in (2020, 2021):
        folder = root / f"year={year}"
        folder.mkdir(parents=True)
        x = rng.normal(size=30)
        pd.DataFrame({"x": x, "label": (x > 0).astype(int)}).to_parquet(folder / "part-0.parquet", index=False)
    return str(root)


def test_a_hive_partitioned_folder_is_read_with_its_partition_columns_as_pandas_reads_it(hive):
    source, _ = open_source(hive)
    rows, _ = source.sample(10**6, seed=0)
    pd.testing.assert_frame_equal(rows, pd.read_parquet(hive))  # year included, as a category


def test_fit_and_predict_on_a_hive_partitioned_folder_keep_the_partition_column(hive):
    clf = TabFormerClassifier(**SMALL).fit(hive, "label")
    assert list(clf.feature_names_in_) == ["x", "year"]
    frame = pd.read_parquet(hive).drop(columns="label")
    np.testing.assert_allclose(clf.predict_proba(hive), clf.predict_proba(frame), atol=1e-6)
    in_memory = TabFormerClassifier(**SMALL).fit(frame, pd.read_parquet(hive)["label"])
    np.testing.assert_allclose(in_memory.predict_proba(hive), in_memory.predict_proba(frame), atol=1e-6)


def test_explain_reads_a_parquet_path_as_predict_does(hive, tmp_path):
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"price": rng.normal(size=30), "colour": rng.choice(["red", "blue"], 30)})
    clf = TabFormerClassifier(**SMALL).fit(X, (X["price"] > 0).astype(int))
    path = tmp_path / "rows.parquet"
    X.iloc[:5].to_parquet(path, index=False)
    pd.testing.assert_frame_equal(clf.explain(path), clf.explain(pd.read_parquet(path)))
    pd.testing.assert_frame_equal(clf.explain(str(path), level="column"), clf.explain(pd.read_parquet(path), level="column"))
    # A folder holding the target column: as predict does, explain reads only the columns fit saw.
    clf = TabFormerClassifier(**SMALL).fit(hive, "label")
    pd.testing.assert_frame_equal(clf.explain(hive, layer=-1), clf.explain(pd.read_parquet(hive).drop(columns="label"), layer=-1))


CORPUS = ["the quick brown fox [jumps] over the lazy dog", "a short one: sep, cls and mask", "the dog </s> sat on the <mat>"]
TYPED = ["hello [SEP] world [MASK] x [CLS] y [PAD] [UNK]", "<s> hi </s> the <mask> dog <pad> <unk>", "[SEP]", "a[SEP]b[MASK]"]


def _bert_json(path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[PAD]", "the", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    backend.train_from_iterator(CORPUS * 3, trainer=trainer)
    backend.save(str(path))
    return str(path)


def _bpe_json(path):
    from tokenizers import ByteLevelBPETokenizer

    backend = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    backend.train_from_iterator(CORPUS * 3, vocab_size=300, min_frequency=1, special_tokens=specials)
    backend.save(str(path))
    return str(path)


def _tokenizers(tmp_path):
    from tabformer.tokenizers import PretrainedTextTokenizer, WordPieceTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[", "]", "<", ">", "/", "sep", "mask", "cls", "pad", "hello", "world"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return {
        "trained": WordPieceTokenizer(vocab_size=80, min_frequency=1),
        "cased": WordPieceTokenizer(vocab_size=80, min_frequency=1, lowercase=False),
        "vocab.txt": WordPieceTokenizer(vocab_file=str(tmp_path / "vocab.txt")),
        "bert tokenizer.json": PretrainedTextTokenizer(_bert_json(tmp_path / "bert.json")),
        "roberta tokenizer.json": PretrainedTextTokenizer(_bpe_json(tmp_path / "bpe.json")),
    }


def _typed_specials(batch, separators):
    """Rows whose real tokens hold a special id other than their own separators: [PAD], [CLS], [MASK], or a [SEP] too many."""
    from tabformer.tokenizers.base import CLS, MASK, PAD, SEP

    bad = []
    for row, (ids, real) in enumerate(zip(batch["input_ids"], batch["attention_mask"])):
        tokens = ids[real].tolist()
        if set(tokens) & {PAD, CLS, MASK} or tokens.count(SEP) != separators or tokens[-1] != SEP:
            bad.append((row, tokens))
    return bad


@pytest.mark.parametrize("name", ["trained", "cased", "vocab.txt", "bert tokenizer.json", "roberta tokenizer.json"])
def test_a_special_token_typed_in_a_text_is_read_as_text_never_as_the_special_id(tmp_path, name):
    # WordPiece vocabularies (trained, vocab.txt) always read "[SEP]" as "[", "sep", "]"; a pretrained
    # tokenizer.json matched its special tokens in the raw text: "[MASK]" typed by a user was the mask id.
    tokenizer = _tokenizers(tmp_path)[name].fit(CORPUS * 3)
    assert _typed_specials(tokenizer.transform(TYPED), separators=1) == []
    assert _typed_specials(tokenizer.transform([text.split() for text in TYPED]), separators=1) == []  # words (tagging)
    pairs = pd.DataFrame({"a": TYPED, "b": TYPED[::-1]})
    assert _typed_specials(tokenizer.fit(pairs).transform(pairs), separators=2) == []
