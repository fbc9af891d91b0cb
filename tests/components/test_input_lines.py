"""attnlab.lab.predict_inputs: where predict's sources come from, source lines with their numbers,
batches, which lines are refused, and the beam size."""

from __future__ import annotations

import io
import itertools

import pytest

from attnlab.lab.predict_inputs import (
    SourceLine,
    batches,
    choose_input,
    first_bad_line,
    line_problem,
    parse_beam_size,
    read_lines,
    split_batch,
)


def no_nines(text: str) -> str | None:
    return f"{text!r} has a 9" if "9" in text else None


@pytest.mark.parametrize(
    "texts,file,expected",
    [(["25-12-2023"], None, None), (["-"], None, "-"), ([], "-", "-"), ([], "in.txt", "in.txt")],
)
def test_choose_input(texts, file, expected):
    assert choose_input(texts, file) == expected


@pytest.mark.parametrize(
    "texts,file,needle",
    [
        (["25-12-2023"], "in.txt", "not both"),
        (["-"], "in.txt", "not both"),
        (["-", "25-12-2023"], None, "cannot be given with other source arguments"),
        ([], None, "no input given"),
        ([], "", "--file '' is empty"),
    ],
)
def test_choose_input_refuses(texts, file, needle):
    with pytest.raises(ValueError, match=needle):
        choose_input(texts, file)


def test_lines_keep_their_numbers_and_blank_lines_are_skipped():
    stream = io.BytesIO(b"\xef\xbb\xbfa\n\n  \nb\r\n c \nlast")
    assert list(read_lines(stream)) == [SourceLine(1, "a"), SourceLine(4, "b"), SourceLine(5, " c "), SourceLine(6, "last")]


def test_a_line_that_is_not_utf8_is_named():
    lines = list(read_lines(io.BytesIO(b"ok\nab\xffc\nnext\n")))
    assert lines[1] == SourceLine(2, "", "the line is not UTF-8 text (byte 0xff at byte 3)")
    assert lines[2] == SourceLine(3, "next")


class Recorder(io.BytesIO):
    """A stream that remembers the longest piece a reader took from it at once."""

    largest = 0

    def readline(self, size=-1):
        piece = super().readline(size)
        self.largest = max(self.largest, len(piece))
        return piece


def test_a_long_line_is_refused_without_being_held_whole():
    stream = Recorder(b"short\n" + b"x" * 100_000 + b"\nafter\n")
    lines = list(read_lines(stream, longest=100))
    assert lines == [SourceLine(1, "short"), SourceLine(2, "", "the line is longer than 100 bytes"), SourceLine(3, "after")]
    assert stream.largest <= 101


def test_a_line_of_exactly_the_limit_is_read():
    assert list(read_lines(io.BytesIO(b"x" * 100 + b"\n"), longest=101)) == [SourceLine(1, "x" * 100)]
    assert list(read_lines(io.BytesIO(b"x" * 101), longest=100))[0].problem == "the line is longer than 100 bytes"


def test_batches_take_lines_as_needed():
    endless = (SourceLine(n, str(n)) for n in itertools.count(1))
    first = next(batches(endless, size=3))
    assert [line.number for line in first] == [1, 2, 3]
    assert next(endless).number == 4  # nothing read ahead
    assert [len(b) for b in batches([SourceLine(n, "a") for n in range(7)], size=3)] == [3, 3, 1]


def test_refused_lines_are_named_with_their_numbers():
    batch = [SourceLine(1, "12"), SourceLine(3, "19"), SourceLine(4, "", "the line is not UTF-8 text"), SourceLine(5, "7")]
    taken, refused = split_batch(batch, no_nines)
    assert [line.number for line in taken] == [1, 5]
    assert refused == ["line 3: '19' has a 9", "line 4: the line is not UTF-8 text"]
    assert line_problem(SourceLine(1, "12"), no_nines) is None


def test_first_bad_line_stops_there_and_counts_the_lines_read():
    lines = [SourceLine(1, "1"), SourceLine(2, "9"), SourceLine(3, "99")]
    assert first_bad_line(lines, no_nines) == ("line 2: '9' has a 9", 2)
    assert first_bad_line(lines[:1], no_nines) == (None, 1)
    assert first_bad_line([], no_nines) == (None, 0)


@pytest.mark.parametrize("value,expected", [(1, 1), ("4", 4), (100, 100)])
def test_beam_size(value, expected):
    assert parse_beam_size(value) == expected


@pytest.mark.parametrize(
    "value,needle",
    [
        (0, "--beam-size 0 is out of range"),
        ("-2", "--beam-size '-2' is out of range"),
        (101, "--beam-size 101 is out of range"),
        ("abc", "--beam-size 'abc' is not a whole number"),
        (2.5, "--beam-size 2.5 is not a whole number"),
        (True, "--beam-size True is not a whole number"),
        (None, "--beam-size None is not a whole number"),
    ],
)
def test_beam_size_refused(value, needle):
    with pytest.raises(ValueError) as caught:
        parse_beam_size(value)
    assert str(caught.value).startswith(needle) and "from 1 (greedy decoding) to 100" in str(caught.value)
