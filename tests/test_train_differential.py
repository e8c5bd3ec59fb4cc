"""bpeforge.train_bpe against the slow reference trainer (DESIGN §1.1).

Generated corpora (tests/corpora.py) are compared merge for merge and id for id;
threads, read-chunk sizes and the way a corpus is split into files must never
change the result. Hand-written cases narrate the rules one at a time, and the
last section checks that bad input fails with a message that says what is wrong.
"""

import random
import re
from pathlib import Path

import bpeforge
import pytest
from corpora import ENDOFTEXT, SCRIPT_SAMPLES, split_across_files, training_corpora, vocab_sizes, write_files
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_trainer import reference_train_bpe

# derandomize: CI sees the same examples on every run; no example database is
# written into the working tree.
DIFFERENTIAL = settings(max_examples=200, deadline=None, derandomize=True, database=None)
MATRIX = settings(max_examples=60, deadline=None, derandomize=True, database=None)
MULTI_FILE = settings(max_examples=100, deadline=None, derandomize=True, database=None)

THREADS = [1, 2, 4]
# Tiny chunks put a read boundary inside nearly every special token, CRLF and
# multi-byte character; 4096 is a realistic small buffer.
CHUNK_SIZES = [1, 7, 64, 4096]


def write_corpus(tmp_path: Path, text: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def train(text: str, tmp_path: Path, vocab_size: int = 1000, specials=()) -> tuple[dict, list]:
    """Train bpeforge on `text` and check it against the reference on the way."""
    path = write_corpus(tmp_path, text)
    result = bpeforge.train_bpe(path, vocab_size, list(specials))
    assert result == reference_train_bpe([path], vocab_size, list(specials))
    return result


# --- generated corpora ------------------------------------------------------


@DIFFERENTIAL
@given(data=st.data())
def test_generated_corpora_match_reference(tmp_path_factory, data):
    text, specials = data.draw(training_corpora(), label="corpus")
    vocab_size = data.draw(vocab_sizes(specials), label="vocab_size")
    [path] = write_files(tmp_path_factory.mktemp("corpus"), [text])

    vocab, merges = bpeforge.train_bpe(str(path), vocab_size, specials)
    ref_vocab, ref_merges = reference_train_bpe([path], vocab_size, specials)

    assert merges == ref_merges  # same pairs, same order (a list of tuples)
    assert vocab == ref_vocab  # same ids: bytes, then 256 + rank, then specials


@MATRIX
@given(data=st.data())
def test_threads_and_chunk_sizes_do_not_change_the_result(tmp_path_factory, data):
    text, specials = data.draw(training_corpora(), label="corpus")
    vocab_size = data.draw(vocab_sizes(specials, max_merges=120), label="vocab_size")
    [path] = write_files(tmp_path_factory.mktemp("corpus"), [text])
    expected = reference_train_bpe([path], vocab_size, specials)

    for num_threads in THREADS:
        for chunk_size in [None, *CHUNK_SIZES]:
            got = bpeforge.train_bpe(path, vocab_size, specials, num_threads=num_threads, chunk_size=chunk_size)
            assert got == expected, f"num_threads={num_threads} chunk_size={chunk_size}"


@MULTI_FILE
@given(data=st.data())
def test_multi_file_corpus_matches_reference(tmp_path_factory, data):
    text, specials = data.draw(training_corpora(), label="corpus")
    contents = data.draw(split_across_files(text), label="files")
    vocab_size = data.draw(vocab_sizes(specials), label="vocab_size")
    num_threads = data.draw(st.sampled_from([None, 1, 2]), label="num_threads")
    chunk_size = data.draw(st.sampled_from([None, *CHUNK_SIZES]), label="chunk_size")
    paths = write_files(tmp_path_factory.mktemp("corpus"), contents)

    expected = reference_train_bpe(paths, vocab_size, specials)
    got = bpeforge.train_bpe(paths, vocab_size, specials, num_threads=num_threads, chunk_size=chunk_size)
    assert got == expected
    # Counts are sums over files, so the order of the files cannot matter.
    assert bpeforge.train_bpe(paths[::-1], vocab_size, specials) == expected


def mixed_corpus(num_documents: int, seed: int = 1) -> str:
    """About 60 KB of many-script text with CRLF and `<|endoftext|>` separators."""
    rng = random.Random(seed)
    words = [*SCRIPT_SAMPLES, "the", "cat", "sat", "on", "a", "mat", "don't", "it's", "42"]
    separators = [" ", " ", " ", "  ", "\n", "\r\n", "\n\n", "\t", ", ", ". "]
    documents = []
    for _ in range(num_documents):
        length = rng.randint(5, 40)
        documents.append("".join(rng.choice(words) + rng.choice(separators) for _ in range(length)))
    return ENDOFTEXT.join(documents)


def test_larger_corpus_is_the_same_for_every_thread_count_and_chunk_size(tmp_path):
    """A corpus big enough that the parallel paths actually split the work."""
    path = write_corpus(tmp_path, mixed_corpus(num_documents=400))
    expected = reference_train_bpe([path], 256 + 1 + 150, [ENDOFTEXT])
    assert len(expected[1]) == 150  # the corpus supports every requested merge
    for num_threads in THREADS:
        for chunk_size in [None, 7, 64, 4096]:
            got = bpeforge.train_bpe(path, 256 + 1 + 150, [ENDOFTEXT], num_threads=num_threads, chunk_size=chunk_size)
            assert got == expected, f"num_threads={num_threads} chunk_size={chunk_size}"


# --- narrated cases -----------------------------------------------------------


def test_ties_go_to_the_greater_pair_left_token_first(tmp_path):
    # Pre-tokens (one per line; a lone "\n" has no pairs):
    #   BAA x3, BZZ x3, AC x3, AB x3, ZZ x2, BA x1
    text = "BAA\n" * 3 + "BZZ\n" * 3 + "AC\n" * 3 + "AB\n" * 3 + "ZZ\n" * 2 + "BA\n"
    vocab, merges = train(text, tmp_path, vocab_size=1000)
    assert merges == [
        (b"Z", b"Z"),  # 256: count 5 (BZZ x3 + ZZ x2), the highest
        (b"B", b"A"),  # 257: count 4 (BAA x3 + BA x1); now four pairs tie at 3:
        (b"BA", b"A"),  # 258: left "BA" > "B", although "BAA" < "BZZ" as concatenations
        (b"B", b"ZZ"),  # 259: left "B" > "A"
        (b"A", b"C"),  # 260: same left, right "C" > "B"
        (b"A", b"B"),  # 261: last; every pre-token is now one token, so training stops
    ]
    assert vocab[258] == b"BAA" and vocab[261] == b"AB" and len(vocab) == 262


def test_pair_counts_include_overlapping_positions(tmp_path):
    # "aaaa" holds (a, a) at three positions, so it counts 3, and ties with
    # (A, B) from "AB" x3; lowercase "a" > "A" breaks the tie. Counting only
    # non-overlapping occurrences (2) would merge (A, B) first.
    merges = train("aaaa\nAB\nAB\nAB", tmp_path)[1]
    assert merges == [
        (b"a", b"a"),  # 256: aaaa -> aa aa
        (b"A", b"B"),  # 257: count 3 beats (aa, aa) with count 1
        (b"aa", b"aa"),  # 258: aa aa -> aaaa
    ]


def test_replacement_is_left_to_right_and_non_overlapping(tmp_path):
    # "aaa" with (a, a) becomes "aa a" (not "a aa"), so the next pair is (aa, a).
    assert train("aaa", tmp_path)[1] == [(b"a", b"a"), (b"aa", b"a")]
    # "aaaaa" -> "aa aa a"; (aa, aa) beats (aa, a) on the right token; then
    # "aaaa a". Right-to-left replacement would end with (a, aaaa) instead.
    assert train("aaaaa", tmp_path)[1] == [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"a")]


def test_crlf_is_preserved(tmp_path):
    # Bytes are read as they are: the pre-tokens are "one", "\r\n\r", "\n",
    # "two", "\r\n" (a whitespace run leaves its last character before a
    # word). Text-mode reading would see "\n\n" and "\n" and never merge "\r".
    merges = train("one\r\n\r\ntwo\r\n", tmp_path)[1]
    assert merges == [
        (b"\r", b"\n"),  # 256: count 2, the only pair above 1; the rest tie at 1:
        (b"w", b"o"),  # 257: "w" is the greatest left token
        (b"t", b"wo"),  # 258
        (b"o", b"n"),  # 259
        (b"on", b"e"),  # 260
        (b"\r\n", b"\r"),  # 261: "\r\n" < every letter
    ]


def test_stops_early_when_no_pair_is_left(tmp_path):
    # The CS336 worked example with the real GPT-2 pattern: the pre-tokens are
    # "low" x1, " low" x4, " lower" x2, " widest" x3, " newest" x6.
    text = "low low low low low lower lower widest widest widest newest newest newest newest newest newest"
    vocab, merges = train(text, tmp_path, vocab_size=1000, specials=[ENDOFTEXT])
    assert merges == [
        (b"s", b"t"),  # 9 (newest + widest), ties with (e, s) and wins on "s" > "e"
        (b"e", b"st"),  # 9
        (b"o", b"w"),  # 7, ties with (l, o): "o" > "l"
        (b"l", b"ow"),  # 7
        (b"w", b"est"),  # 6, the greatest of five pairs at 6
        (b"n", b"e"),  # 6
        (b"ne", b"west"),  # 6
        (b" ", b"newest"),  # 6, ties with (" ", low): "newest" > "low"
        (b" ", b"low"),  # 6
        (b"w", b"i"),  # 3: widest is next
        (b"wi", b"d"),
        (b"wid", b"est"),
        (b" ", b"widest"),
        (b"e", b"r"),  # 2: "e" > " low"
        (b" low", b"er"),  # every pre-token is one token now: stop at 15 of 743
    ]
    assert len(vocab) == 256 + 15 + 1
    assert vocab[256 + 15] == ENDOFTEXT.encode()  # the special comes after the merges


def test_vocab_size_at_the_minimum_gives_no_merges(tmp_path):
    vocab, merges = train("hello hello", tmp_path, vocab_size=257, specials=[ENDOFTEXT])
    assert merges == []
    assert vocab == {**{i: bytes([i]) for i in range(256)}, 256: ENDOFTEXT.encode()}


@pytest.mark.parametrize("text", ["", ENDOFTEXT, ENDOFTEXT * 3, "<pad><|endoftext|><pad>"])
def test_empty_corpus_or_only_specials_is_an_error(tmp_path, text):
    # Issue 11: this used to "succeed" with 258 tokens and no merges.
    specials = [ENDOFTEXT, "<pad>"]
    path = write_corpus(tmp_path, text)
    with pytest.raises(ValueError, match="no text to train on"):
        bpeforge.train_bpe(path, 1000, specials)


def test_specials_split_documents_and_never_merge(tmp_path):
    # The documents are "ab", "ab", "ab": the double special is one match, and
    # no pair spans a special (no "b<" or "|>a").
    specials = [ENDOFTEXT, ENDOFTEXT + ENDOFTEXT]
    vocab, merges = train("ab<|endoftext|><|endoftext|>ab<|endoftext|>ab", tmp_path, specials=specials)
    assert merges == [(b"a", b"b")]
    assert vocab[257] == b"<|endoftext|>" and vocab[258] == b"<|endoftext|><|endoftext|>"
    assert not any(b"<|" in value for key, value in vocab.items() if key < 257)


def test_longest_special_wins_where_several_start(tmp_path):
    # "<s>" and "<s>!!" both start at the same place: the longer one is cut
    # out, so the documents are "hi" and "hi" and (h, i) is the only pair.
    # Trying "<s>" first would leave "!!hi" behind and add the pair (!, !).
    merges = train("hi<s>!!hi", tmp_path, specials=["<s>", "<s>!!"])[1]
    assert merges == [(b"h", b"i")]


def test_leftmost_special_wins_over_a_later_longer_one(tmp_path):
    # Specials "ab" and "bcd" overlap in "xabcdx". The leftmost match wins
    # (as re.split with the longest-first alternation does): "ab" is cut out
    # and "cdx" remains, so the documents are "x" and "cdx" and the pairs are
    # (c, d) and (d, x). Cutting "bcd" instead would leave "xa" and "x".
    merges = train("xabcdx", tmp_path, specials=["ab", "bcd"])[1]
    assert merges == [(b"d", b"x"), (b"c", b"dx")]


def test_end_of_file_ends_a_document(tmp_path):
    # Two files "ab" give the pre-token "ab" twice: one merge, then nothing
    # left. One file "abab" is a single pre-token "abab" with a second merge.
    first, second = write_files(tmp_path, ["ab", "ab"])
    assert bpeforge.train_bpe([first, second], 1000, []) == reference_train_bpe([first, second], 1000, [])
    assert bpeforge.train_bpe([first, second], 1000, [])[1] == [(b"a", b"b")]
    joined = write_corpus(tmp_path, "abab", name="joined.txt")
    assert bpeforge.train_bpe(joined, 1000, [])[1] == [(b"a", b"b"), (b"ab", b"ab")]


def test_a_special_cut_by_a_file_end_is_plain_text(tmp_path):
    # "<|endof" + "text|>" in two files is no special token: its halves train.
    paths = write_files(tmp_path, ["x<|endof", "text|>x"])
    vocab, merges = bpeforge.train_bpe(paths, 300, [ENDOFTEXT])
    assert (vocab, merges) == reference_train_bpe(paths, 300, [ENDOFTEXT])
    # "endof" and "text" are pre-tokens now; the whole special would have removed them.
    assert b"endof" in vocab.values() and b"text" in vocab.values()


def test_input_path_may_be_str_pathlike_or_a_list_of_either(tmp_path):
    path = write_corpus(tmp_path, "the cat sat on the mat, the end")
    expected = reference_train_bpe([path], 270, [])
    assert bpeforge.train_bpe(str(path), 270, []) == expected
    assert bpeforge.train_bpe(path, 270, []) == expected
    assert bpeforge.train_bpe([path], 270, []) == expected
    assert bpeforge.train_bpe([str(path)], 270, [], progress=False) == expected


# --- bad input ------------------------------------------------------------------


def test_missing_file_raises_file_not_found_naming_the_path(tmp_path):
    present = write_corpus(tmp_path, "abc")
    missing = tmp_path / "no_such_corpus.txt"
    for argument in [missing, str(missing), [present, missing]]:
        with pytest.raises(FileNotFoundError) as excinfo:
            bpeforge.train_bpe(argument, 300, [])
        assert str(missing) in str(excinfo.value)


def test_directory_raises_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError) as excinfo:
        bpeforge.train_bpe(tmp_path, 300, [])
    assert str(tmp_path) in str(excinfo.value)


@pytest.mark.parametrize(
    ("specials", "vocab_size"),
    [([], 255), ([], 0), ([ENDOFTEXT], 256), ([ENDOFTEXT, "<pad>", "<s>"], 258), ([], -1)],
)
def test_vocab_size_below_the_minimum_names_the_minimum(tmp_path, specials, vocab_size):
    path = write_corpus(tmp_path, "abc")
    with pytest.raises(ValueError, match=str(256 + len(specials))):
        bpeforge.train_bpe(path, vocab_size, specials)


@pytest.mark.parametrize("specials", [[""], [ENDOFTEXT, ""], [ENDOFTEXT, ENDOFTEXT], ["<s>", "</s>", "<s>"]])
def test_empty_or_duplicated_special_tokens_raise_value_error(tmp_path, specials):
    path = write_corpus(tmp_path, "abc")
    with pytest.raises(ValueError):
        bpeforge.train_bpe(path, 1000, specials)


@pytest.mark.parametrize("chunk_size", [None, 1, 7, 64])
@pytest.mark.parametrize(
    ("content", "offset"),
    [
        (b"hello world " * 100 + b"\xff tail", 1200),  # a byte that never starts UTF-8
        (b"caf\xc3\xa9 " * 50 + b"\xc3(", 300),  # a lead byte without its continuation
        (b"abc" * 100 + b"\xe2\x82", 300),  # a sequence cut off by the end of the file
        (b"\x80abc", 0),  # a stray continuation byte first
    ],
)
def test_invalid_utf8_names_the_file_and_the_byte_offset(tmp_path, content, offset, chunk_size):
    good = write_corpus(tmp_path, "fine text", name="good.txt")
    bad = tmp_path / "bad_encoding.txt"
    bad.write_bytes(content)
    with pytest.raises(ValueError) as excinfo:
        bpeforge.train_bpe([good, bad], 300, [], chunk_size=chunk_size)
    message = str(excinfo.value)
    assert "bad_encoding.txt" in message
    # Digits in the temporary directory's name must not pass for the offset.
    without_path = message.replace(str(bad), "")
    assert re.search(rf"(?<!\d){offset}(?!\d)", without_path), f"no offset {offset} in {message!r}"
