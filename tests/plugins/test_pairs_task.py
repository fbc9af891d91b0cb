"""The pairs task: a user's own file in every format, its options, and every mistake in it refused
in one line naming the file (and the row) before anything trains; the file is never written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from attnlab.data.splits import make_splits
from attnlab.plugins import PluginError, create_plugin
from attnlab.plugins.builtin.pairs_task import PairsTask
from attnlab.plugins.testing import check_task

WORDS = {"cat": ["K AE T"], "dog": ["D AO G"], "either": ["IY DH ER", "AY DH ER"], "pace": ["P EY S"], "go": ["G OW"]}


def frame() -> pd.DataFrame:
    return pd.DataFrame([(word, target) for word, targets in WORDS.items() for target in targets], columns=["word", "phonemes"])


def write(folder: Path, suffix: str, data: pd.DataFrame | None = None) -> Path:
    """``data`` (default: :func:`frame`) written as a ``suffix`` file the way a user's tools write it."""
    data = frame() if data is None else data
    path = folder / f"pairs{suffix}"
    if suffix == ".csv":
        data.to_csv(path, index=False)
    elif suffix == ".tsv":
        data.to_csv(path, index=False, sep="\t")
    elif suffix == ".jsonl":
        data.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        data.to_parquet(path, index=False)
    return path


def pairs(path: Path, **options) -> PairsTask:
    return PairsTask(path=str(path), source_column="word", target_column="phonemes", target_tokenization="whitespace", **options)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_every_format_gives_the_same_examples_and_the_file_stays_untouched(tmp_path, suffix):
    path = write(tmp_path, suffix)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    task = pairs(path)
    assert [(ex.source, ex.target) for ex in task.corpus()] == [(w, t) for w, ts in WORDS.items() for t in ts]
    assert task.target_alphabet == sorted({p for ts in WORDS.values() for t in ts for p in t.split()})
    assert task.source_alphabet == "".join(sorted(set("".join(WORDS)))) and task.max_source_length == 6
    assert task.data_version() == before == hashlib.sha256(path.read_bytes()).hexdigest()
    check_task(PairsTask, path=str(path), source_column="word", target_column="phonemes", target_tokenization="whitespace")


def test_a_source_keeps_all_its_targets_in_one_split(tmp_path):
    rows = [(f"w{i:03d}", f"T{i % 7} A") for i in range(300)] + [("w007", "ALT B")]
    path = write(tmp_path, ".csv", pd.DataFrame(rows, columns=["word", "phonemes"]))
    task = pairs(path, source_tokenization="characters")
    splits = make_splits(task, (250, 20, 30), seed=0)
    owner = [name for name, examples in splits.items() if any(ex.source == "w007" for ex in examples)]
    assert len(owner) == 1 and sum(ex.source == "w007" for ex in getattr(splits, owner[0])) == 2
    assert make_splits(task, (250, 20, 30), seed=5).test == splits.test  # by hash, not by seed


def test_an_alignment_column_is_read_and_checked(tmp_path):
    data = pd.DataFrame({"word": ["ab", "ba"], "phonemes": ["A B", "B A"], "links": ["[[0], [1]]", "[[0], [1]]"]})
    path = write(tmp_path, ".csv", data)
    task = pairs(path, alignment_column="links")
    assert [ex.alignment for ex in task.corpus()] == [((0,), (1,)), ((0,), (1,))]
    data.loc[1, "links"] = "[[0]]"
    with pytest.raises(ValueError, match=r"row 2: the alignment has 1 entries; the target has 2 tokens"):
        pairs(write(tmp_path, ".csv", data), alignment_column="links")


def test_long_sources_are_refused_or_dropped_and_counted(tmp_path, caplog):
    path = write(tmp_path, ".jsonl")
    with pytest.raises(ValueError) as refused:
        pairs(path, max_length=3)
    assert str(refused.value) == (
        f"{path}: 3 source(s) are longer than max_length = 3 tokens (the first: row 3); "
        "raise -o task.max_length or leave them out with -o task.drop_long=true"
    )
    task = pairs(path, max_length=3, drop_long=True)
    assert {ex.source for ex in task.corpus()} == {"cat", "dog", "go"}
    assert task.data_summary() == "pairs.jsonl: 6 rows read, 3 kept (3 too long left out)"


@pytest.mark.parametrize(
    ("content", "name", "options", "message"),
    [
        (None, "missing.csv", {}, "{path} does not exist"),
        (b"word,phonemes\ncat,K AE T\n", "pairs.xlsx", {}, "{path}: cannot tell its format from the suffix '.xlsx'"),
        (b"", "pairs.csv", {}, "{path} is empty: it holds no rows"),
        (b"word,phonemes\n", "pairs.csv", {}, "{path} is empty: it holds no rows"),
        (
            b"word,phonemes\ncat,K AE T\ndog,D \xff G\n",
            "pairs.csv",
            {},
            "{path}: line 3 is not utf-8 text (byte 0xff); give the file's encoding with -o task.encoding=NAME",
        ),
        (b"word,sound\ncat,K AE T\n", "pairs.csv", {}, "{path} has no column 'phonemes'; its columns: 'word', 'sound' (name them with"),
        (
            b"word\tphonemes\ncat\tK AE T\n",
            "pairs.csv",
            {},
            "{path} has no column 'word'; its columns: 'word\\tphonemes'; its header is separated by tabs: read it as TSV with -o task.format=tsv",
        ),
        (
            b"word,phonemes\ncat,K AE T\n",
            "pairs.csv",
            {"encoding": "klingon"},
            "encoding 'klingon' is not a text encoding Python knows; e.g. utf-8",
        ),
        (b"word,phonemes\nca\x00t,K AE T\n", "pairs.csv", {}, "{path}: row 1: the source holds the control character U+0000; remove it"),
        (b"word,phonemes\ncat,K AE\x07 T\n", "pairs.csv", {}, "{path}: row 1: the target holds the control character U+0007"),
        (
            b"word,phonemes\ncat,K AE T\n,D AO G\n,G OW\n",
            "pairs.csv",
            {},
            "{path}: 2 row(s) have an empty source (the first: row 2); fill them in, or leave them out with -o task.drop_empty=true",
        ),
        (b"word,phonemes\ncat,\n", "pairs.csv", {}, "{path}: 1 row(s) have an empty target (the first: row 1)"),
        (b'{"word": "cat", "phonemes": "K AE T"}\n{"word": \n', "pairs.jsonl", {}, "{path} is not a readable jsonl file"),
        (b"word,phonemes\ncat,K AE T\n", "pairs.csv", {"format": "xlsx"}, "format 'xlsx' is not one of csv, jsonl, parquet, tsv"),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path, content, name, options, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError) as refused:
        pairs(path, **options)
    text = str(refused.value)
    assert text.startswith(message.format(path=path)), text
    assert "\n" not in text
    if content is not None:
        assert path.read_bytes() == content


def test_the_task_needs_a_path_and_known_tokenizations():
    with pytest.raises(PluginError, match=r"task 'pairs' needs option\(s\) path: give -o task.path=VALUE"):
        create_plugin("tasks", "pairs")
    with pytest.raises(PluginError, match=r"target_tokenization must be one of characters, whitespace, got 'words'"):
        create_plugin("tasks", "pairs", path="x.csv", target_tokenization="words")


def test_json_lines_alignments_may_be_lists(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"source": s, "target": t, "a": a}) for s, t, a in [("ab", "ba", [[1], [0]])]) + "\n")
    task = PairsTask(path=str(path), alignment_column="a")
    assert task.corpus()[0].alignment == ((1,), (0,))


def test_separate_files_are_the_validation_and_test_splits_and_leave_training(tmp_path):
    (tmp_path / "train").mkdir(), (tmp_path / "test").mkdir(), (tmp_path / "val").mkdir()
    train = write(tmp_path / "train", ".csv")  # cat, dog, either (2 targets), pace, go
    test = write(tmp_path / "test", ".jsonl", pd.DataFrame([("dog", "D AO G"), ("zebra", "Z IY B R AH"), ("either", "IY DH ER")],
                                                            columns=["word", "phonemes"]))  # fmt: skip
    validation = write(tmp_path / "val", ".tsv", pd.DataFrame([("pace", "P EY S")], columns=["word", "phonemes"]))
    task = pairs(train, test_path=str(test), validation_path=str(validation))
    splits = make_splits(task, (2, 1, 2), seed=0)
    assert [(ex.source, ex.target) for ex in splits.test] == [("dog", "D AO G"), ("zebra", "Z IY B R AH")]  # the file's first 2 sources
    assert [ex.source for ex in splits.validation] == ["pace"]
    assert sorted(ex.source for ex in splits.train) == ["cat", "go"]  # held-out sources never train
    assert "z" in task.source_alphabet and "Z" in task.target_alphabet  # the test file's tokens are known
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (train, validation, test)]
    assert [digest for _, digest in task.files.values()] == digests and task.data_version() not in digests
    assert task.data_version() != pairs(train, test_path=str(train)).data_version()
    with pytest.raises(ValueError, match="the test data of task PairsTask has only 3 distinct sources, fewer than the 4 asked for"):
        make_splits(task, (1, 1, 4), seed=0)
    with pytest.raises(ValueError, match="train = 3 sources, but task PairsTask has only 2 distinct sources besides its held-out splits"):
        make_splits(task, (3, 1, 2), seed=0)
    task._held_out = {"train": splits.train}  # a third-party task could name any split
    with pytest.raises(ValueError, match="holds out a split named 'train'; only 'validation' and 'test' can be"):
        make_splits(task, (1, 1, 1), seed=0)


def test_a_spreadsheet_export_with_bom_crlf_quotes_spaces_and_duplicates_is_read_and_counted(tmp_path):
    path = tmp_path / "export.csv"
    rows = [
        "word,phonemes",
        '"cat ",K AE T',
        'dog,"D AO G  "',
        '"a, b",EY B',
        "cat,K AE T",
        " go , G OW ",
        "either,IY DH ER",
        "either,AY DH ER",
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(rows).encode() + b"\r\n")
    task = pairs(path)
    assert [(ex.source, ex.target) for ex in task.corpus()] == [
        ("cat", "K AE T"), ("dog", "D AO G"), ("a, b", "EY B"), ("go", "G OW"), ("either", "IY DH ER"), ("either", "AY DH ER")
    ]  # fmt: skip
    assert task.data_summary() == (
        "export.csv: 7 rows read, 6 kept (1 duplicate left out); 4 cells stripped of surrounding whitespace; "
        "1 source with several targets (each a correct reference)"
    )
    assert [(ex.source, ex.target) for ex in pairs(path, strip=False, dedupe=False).corpus()][:2] == [("cat ", "K AE T"), ("dog", "D AO G")]
    assert len(pairs(path, strip=False, dedupe=False).corpus()) == 7  # 'cat ' and 'cat' differ unstripped; nothing merged


def test_a_latin_1_file_is_read_with_its_encoding_and_refused_without(tmp_path):
    path = tmp_path / "latin.tsv"
    path.write_bytes("word\tphonemes\ncafé\tK AE F EY\nnaïve\tN AY IY V\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"line 2 is not utf-8 text \(byte 0xe9\); give the file's encoding with -o task.encoding=NAME"):
        pairs(path)
    task = pairs(path, encoding="latin-1")
    assert [ex.source for ex in task.corpus()] == ["café", "naïve"] and "é" in task.source_alphabet


def test_parquet_with_other_column_names_and_empty_rows_dropped_on_request(tmp_path):
    data = pd.DataFrame({"graphemes": ["cat", "", "dog", "go"], "sounds": ["K AE T", "X", "D AO G", None]})
    path = tmp_path / "lexicon.parquet"
    data.to_parquet(path, index=False)
    options = dict(path=str(path), source_column="graphemes", target_column="sounds", target_tokenization="whitespace")
    with pytest.raises(ValueError, match=r"1 row\(s\) have an empty source \(the first: row 2\)"):
        PairsTask(**options)
    task = PairsTask(**options, drop_empty=True)
    assert [(ex.source, ex.target) for ex in task.corpus()] == [("cat", "K AE T"), ("dog", "D AO G")]
    assert task.data_summary() == "lexicon.parquet: 4 rows read, 2 kept (2 empty left out)"


def test_an_empty_column_name_gets_a_way_to_name_it(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(",phonemes\ncat,K AE T\n")
    with pytest.raises(ValueError, match=r"has no column ''; .*a column with an empty header is read as 'Unnamed: 0': name it so"):
        PairsTask(path=str(path), source_column="", target_column="phonemes")
    assert PairsTask(path=str(path), source_column="Unnamed: 0", target_column="phonemes").corpus()[0].source == "cat"


def test_a_symbolic_link_loop_and_an_unreadable_file_are_one_line(tmp_path):
    loop = tmp_path / "loop.csv"
    loop.symlink_to(tmp_path / "other.csv")
    (tmp_path / "other.csv").symlink_to(loop)
    with pytest.raises(ValueError) as refused:
        pairs(loop)
    assert str(refused.value) == f"{loop} cannot be read: its symbolic links form a loop; point it at a file"
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"folder.csv is not a file$"):
        pairs(folder)


def test_a_tab_separates_tokens_on_a_whitespace_side_but_is_refused_in_characters(tmp_path):
    path = write(tmp_path, ".jsonl", pd.DataFrame([("cat", "K\tAE T")], columns=["word", "phonemes"]))
    assert pairs(path).corpus()[0].target == "K AE T"
    path = write(tmp_path, ".jsonl", pd.DataFrame([("c\tat", "K AE T")], columns=["word", "phonemes"]))
    with pytest.raises(ValueError, match=r"row 1: the source holds the control character U\+0009"):
        pairs(path)


def test_a_file_is_split_80_10_10_by_its_sources_unless_sizes_are_given(tmp_path):
    from attnlab.data.splits import split_sizes

    rows = [(f"w{i:03d}", f"T{i % 7} A") for i in range(200)] + [("w007", "ALT B")]
    task = pairs(write(tmp_path, ".csv", pd.DataFrame(rows, columns=["word", "phonemes"])), source_tokenization="characters")
    assert split_sizes(task, (None, None, None)) == (160, 20, 20)
    assert split_sizes(task, (None, 50, None)) == (130, 50, 20)
    assert split_sizes(task, (10, None, 5)) == (10, 20, 5)
    tiny = pairs(write(tmp_path, ".csv", pd.DataFrame([("ab", "A"), ("cd", "C")], columns=["word", "phonemes"])))
    with pytest.raises(
        ValueError, match=r"has 2 distinct source\(s\) to split: too few .*--train-size N, -o validation_size=N, -o test_size=N"
    ):
        split_sizes(tiny, (None, None, None))
