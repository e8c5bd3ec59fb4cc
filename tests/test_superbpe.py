"""`bpeforge.train_superbpe` against the reference: HF `tokenizers`' own
pre-tokenizers and trainer for stage 1, the SuperBPE fork's recorded output
for stage 2 (tests/data/superbpe/, see its README), with `tie_break="hf"`; plain
Python oracles of stage 2 in both modes; and the rules themselves."""

from __future__ import annotations

import json
from pathlib import Path

import bpeforge
import pytest
from bpeforge.superbpe import STAGE1_PATTERN, SUPERWORD_PATTERN, train_superbpe
from hypothesis import given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, pre_tokenizers  # noqa: E402

FIXTURES = Path(__file__).parent / "data" / "superbpe"
R1 = r"(?=(\d{3})+(?!\d))| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
DIGIT_GROUPS = r"(?=(\d{3})+(?!\d))"


def hf_pipeline(split: str) -> pre_tokenizers.PreTokenizer:
    """The reference's pre-tokenizer, less its ByteLevel step (which only respells bytes)."""
    digits = pre_tokenizers.Digits(individual_digits=False)
    return pre_tokenizers.Sequence([digits, pre_tokenizers.Split(Regex(split), "isolated")])


# Numerals of several kinds (decimal digits of other scripts, superscripts,
# fractions, Roman numerals), whitespace of several kinds, letters, punctuation.
TEXT_CHARS = [*"ab  \n\t\r,.:;'-1234567890", "é", "Ж", "²", "٣", "Ⅻ", "½", "\u3000", "\u00a0", "😀", "中", "१"]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(TEXT_CHARS), max_size=40))
def test_the_patterns_cut_text_as_the_reference_pipelines_do(text):
    for pipeline, pattern in ((hf_pipeline(R1), STAGE1_PATTERN), (hf_pipeline(DIGIT_GROUPS), SUPERWORD_PATTERN)):
        assert bpeforge.pretokenize(text, pattern) == [piece for piece, _ in pipeline.pre_tokenize_str(text)]


def test_numerals_are_grouped_by_three_from_the_right_and_lines_stay_whole():
    assert bpeforge.pretokenize("pay 1234567 now", SUPERWORD_PATTERN) == ["pay ", "1", "234", "567", " now"]
    assert bpeforge.pretokenize("pay  1234 now", STAGE1_PATTERN) == ["pay", "  ", "1", "234", " now"]


def hf_stage1_merges(path: Path, vocab_size: int) -> list[tuple[str, str]]:
    from tokenizers import Tokenizer, models, trainers

    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([hf_pipeline(R1), byte_level])
    tokenizer.train([str(path)], trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False))
    return [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def byte_chars() -> list[str]:
    """GPT-2's byte -> char table, in which HF writes tokens."""
    printable = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    chars, extra = [], 256
    for byte in range(256):
        chars.append(chr(byte) if byte in printable else chr(extra))
        extra += byte not in printable
    return chars


CHARS = byte_chars()


def spelled(merges: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [("".join(CHARS[b] for b in left), "".join(CHARS[b] for b in right)) for left, right in merges]


def fixture_cases() -> list[dict]:
    if not (FIXTURES / "cases.json").exists():
        return []
    return json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", fixture_cases(), ids=lambda case: case["name"])
def test_stage1_equals_tokenizers_and_stage2_equals_the_fork(case):
    corpus = FIXTURES / case["corpus"]
    vocab_size, t = case["vocab_size"], case["t"]
    stage1 = bpeforge.train(
        corpus, vocab_size, tie_break="hf", documents="lines", pattern=STAGE1_PATTERN, num_threads=2
    ).merges
    assert spelled(stage1) == hf_stage1_merges(corpus, vocab_size)
    # The fork read `head -n t merges.txt`: the version line and t-1 merges.
    result = train_superbpe(corpus, vocab_size, transition=t - 1, tie_break="hf", num_threads=2)
    fork = [tuple(line.split(" ")) for line in (FIXTURES / case["merges"]).read_text(encoding="utf-8").splitlines()[1:]]
    assert spelled(result.merges) == fork
    assert any(b" " in left + right and (left + right).strip(b" ").count(b" ") >= 1 for left, right in result.merges)


@pytest.mark.parametrize("tie_break, vocab_size", [("cs336", 256 + 10 + 100), ("hf", 120)])
def test_superword_tokens_obey_the_rules(tmp_path, tie_break, vocab_size):
    path = tmp_path / "t.txt"
    path.write_text(("the end of the day: we go on and on and on\n" * 5 + "in 2024, 1234567 of the\n") * 4)
    result = train_superbpe(path, vocab_size, transition=10, max_words=3, tie_break=tie_break, num_threads=1)
    tokens = [left + right for left, right in result.merges[10:]]
    assert tokens, "stage 2 learnt nothing"
    for token in tokens:
        assert b": " not in token and len(token.split()) <= 3, token
    assert any(len(token.split()) >= 2 for token in tokens), tokens
    assert result.pattern == SUPERWORD_PATTERN
    # Stage 2 made the training text shorter in tokens than stage 1's merges did.
    assert 0 < result.stats.tokens_after < result.stats.tokens_before
    # Saved and loaded, it encodes with the superword pieces: " of the" is one token.
    tokenizer = bpeforge.Tokenizer.load(result.save(tmp_path / "tok"))
    ids = tokenizer.encode("the end of the day")
    assert tokenizer.decode(ids) == "the end of the day"
    assert len(ids) < 5, "five words, fewer tokens"


def test_vocab_size_counts_bytes_merges_and_specials_with_cs336_ties(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("the end of the day<|endoftext|>\nand on and on and on\n" * 20)
    result = train_superbpe(path, 256 + 1 + 12 + 8, ["<|endoftext|>"], transition=12, num_threads=1)
    stage1 = bpeforge.train(path, 256 + 1 + 12, ["<|endoftext|>"], documents="lines", pattern=STAGE1_PATTERN)
    # Every inherited merge is kept, the specials are cut out of the text and come last.
    assert result.merges[:12] == stage1.merges and len(result.merges) == 12 + 8
    assert len(result.vocab) == 256 + 1 + 12 + 8 and result.vocab[len(result.vocab) - 1] == b"<|endoftext|>"
    assert all(b"<|" not in left + right for left, right in result.merges)


def test_arguments_are_checked(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("ab ab\n")
    with pytest.raises(ValueError, match="tie_break"):
        train_superbpe(path, 300, transition=1, tie_break="gpt2")
    with pytest.raises(ValueError, match="transition"):
        train_superbpe(path, 50, transition=40, tie_break="hf")
    with pytest.raises(ValueError, match="transition"):
        train_superbpe(path, 400, transition=40)
    with pytest.raises(ValueError, match="below the 297 tokens stage 1 leaves"):
        train_superbpe(path, 296, transition=40, special_tokens=["<s>"])


def oracle_stage2(pieces: dict[bytes, int], inherited, vocab_size: int, max_words: int, forbid: bytes, tie_break):
    """Stage 2's rules written plainly, for one of the two conventions."""

    def allowed(token: bytes) -> bool:
        return forbid not in token and len([w for w in token.split(b" ") if w]) <= max_words

    oracle = {"hf": oracle_stage2_hf, "cs336": oracle_stage2_cs336}[tie_break]
    return oracle(pieces, inherited, vocab_size, allowed)


def merged(word: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    """`pair` merged in `word`, left to right, non-overlapping."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def oracle_stage2_cs336(pieces: dict[bytes, int], inherited, vocab_size: int, allowed):
    """CS336's conventions: each piece encoded with the inherited merges by rank (the lowest-ranked pair
    first), then the CS336 loop (recount, take the greatest (count, left, right) whose token is allowed,
    merge it everywhere) until 256 bytes + merges reach vocab_size; every inherited merge kept."""
    ranks: dict = {}
    for rank, pair in enumerate(inherited):
        ranks.setdefault(pair, rank)
    words = []
    for piece in pieces:
        word = [bytes([b]) for b in piece]
        while True:
            found = [ranks[pair] for pair in zip(word, word[1:]) if pair in ranks]
            if not found:
                break
            word = merged(word, inherited[min(found)])
        words.append(word)
    merges = list(inherited)
    while 256 + len(merges) < vocab_size:
        counts: dict = {}
        for word, n in zip(words, pieces.values()):
            for pair in zip(word, word[1:]):
                counts[pair] = counts.get(pair, 0) + n
        candidates = [(n, pair) for pair, n in counts.items() if allowed(pair[0] + pair[1])]
        if not candidates:
            break
        best = max(candidates)[1]
        merges.append(best)
        words = [merged(word, best) for word in words]
    return merges


def oracle_stage2_hf(pieces: dict[bytes, int], inherited, vocab_size: int, allowed):
    """The fork's `do_train_extend`, written plainly: HF ids, a map with one
    entry (count, words) per pair during the replay, then HF's heap loop."""
    import heapq

    order = sorted({b for piece in pieces for b in piece}, key=lambda b: CHARS[b])
    tokens = [bytes([b]) for b in order]
    ids = {token: i for i, token in enumerate(tokens)}
    words = [[ids[bytes([b])] for b in piece] for piece in pieces]
    counts = list(pieces.values())
    pair_counts: dict = {}
    holders: dict = {}
    for w, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + counts[w]
            holders.setdefault(pair, set()).add(w)

    def merge(pair, where, new):
        gained: dict = {}
        for w in where:
            word, out, i = words[w], [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    changes = []
                    if out:
                        changes += [((out[-1], pair[0]), -1), ((out[-1], new), 1)]
                    if i + 2 < len(word):
                        changes += [((pair[1], word[i + 2]), -1), ((new, word[i + 2]), 1)]
                    for changed, delta in changes:
                        pair_counts[changed] = pair_counts.get(changed, 0) + delta * counts[w]
                        if delta > 0:
                            gained.setdefault(changed, set()).add(w)
                    out.append(new)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            words[w] = out
        return {pair: where for pair, where in gained.items() if pair_counts[pair] > 0}

    def token_id(token):
        if token not in ids:
            ids[token] = len(tokens)
            tokens.append(token)
        return ids[token]

    made = []
    queue = {pair: where for pair, where in holders.items() if pair_counts[pair] > 0}
    for left, right in inherited:
        pair = (ids.get(left), ids.get(right))
        if None in pair or pair not in queue:
            continue
        where = queue.pop(pair)
        new = token_id(left + right)
        made.append((pair, new))
        queue.update(merge(pair, where, new))
    heap = [(-pair_counts[pair], pair, n, where) for n, (pair, where) in enumerate(queue.items())]
    heapq.heapify(heap)
    serial = len(heap)
    while len(tokens) < vocab_size and heap:
        negative, pair, _, where = heapq.heappop(heap)
        if -negative != pair_counts[pair]:
            heapq.heappush(heap, (-pair_counts[pair], pair, serial, where))
            serial += 1
            continue
        if pair_counts[pair] < 1:
            break
        token = tokens[pair[0]] + tokens[pair[1]]
        if not allowed(token):
            continue
        new = token_id(token)
        made.append((pair, new))
        for gained_pair, gained_where in merge(pair, where, new).items():
            heapq.heappush(heap, (-pair_counts[gained_pair], gained_pair, serial, gained_where))
            serial += 1
    last = {pair: rank for rank, (pair, _) in enumerate(made)}
    return [(tokens[p[0]], tokens[p[1]]) for rank, (p, _) in enumerate(made) if last[p] == rank]


LINES = st.lists(st.text(alphabet=st.sampled_from([*"ab  ::,1234", "é"]), min_size=1, max_size=30), min_size=1)


@pytest.mark.parametrize("tie_break", ["hf", "cs336"])
@settings(max_examples=60, deadline=None)
@given(lines=LINES, transition=st.integers(1, 12), extra=st.integers(0, 40), max_words=st.integers(1, 4))
def test_stage2_equals_a_plain_oracle_on_generated_corpora(
    tmp_path_factory, tie_break, lines, transition, extra, max_words
):
    path = tmp_path_factory.mktemp("superbpe") / "t.txt"
    text = "\n".join(lines) + "\n"
    path.write_bytes(text.encode("utf-8"))
    # Stage 1 as train_superbpe runs it: HF's to vocab_size, CS336's to its `transition` merges (a prefix).
    stage1_size = 1000 if tie_break == "hf" else 256 + transition
    stage1 = bpeforge.train(path, stage1_size, tie_break=tie_break, documents="lines", pattern=STAGE1_PATTERN).merges
    if transition > len(stage1):
        return
    pieces: dict[bytes, int] = {}
    for line in text.splitlines(keepends=True):
        for piece in bpeforge.pretokenize(line, SUPERWORD_PATTERN):
            pieces[piece.encode("utf-8")] = pieces.get(piece.encode("utf-8"), 0) + 1
    alphabet = 256 if tie_break == "cs336" else len({b for p in pieces for b in p})
    vocab_size = alphabet + transition + extra
    result = train_superbpe(
        path, vocab_size, transition=transition, max_words=max_words, tie_break=tie_break, num_threads=1
    )
    expected = oracle_stage2(pieces, stage1[:transition], vocab_size, max_words, b": ", tie_break)
    assert result.merges == expected


def test_the_cli_writes_the_forks_merges(tmp_path):
    import subprocess
    import sys

    case = next(case for case in fixture_cases() if case["name"] == "gutenberg")
    output = tmp_path / "tok"
    command = [sys.executable, "-m", "bpeforge", "train", str(FIXTURES / case["corpus"]), "-o", str(output)]
    command += ["--vocab-size", str(case["vocab_size"]), "--superbpe", str(case["t"] - 1), "--tie-break", "hf"]
    run = subprocess.run([*command, "--no-special-tokens", "--no-progress"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "superword tokens (spanning words): " in run.stdout and "bytes/token" in run.stdout
    written = (output / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert written == (FIXTURES / case["merges"]).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("case", fixture_cases()[:1], ids=lambda case: case["name"])
def test_the_reference_pipelines_as_pre_tokenizer_objects_give_the_forks_merges(case):
    """The tokenizer.json `pre_tokenizer` objects the reference builds, passed as such, cut as the patterns do."""
    from bpeforge.formats.superbpe_pipelines import reference_pre_tokenizer

    corpus = FIXTURES / case["corpus"]
    stage1, stage2 = reference_pre_tokenizer(STAGE1_PATTERN), reference_pre_tokenizer(SUPERWORD_PATTERN)
    result = train_superbpe(
        corpus,
        case["vocab_size"],
        transition=case["t"] - 1,
        pre_tokenizer=stage1,
        superword_pre_tokenizer=json.dumps(stage2),
        tie_break="hf",
        num_threads=2,
    )
    fork = [tuple(line.split(" ")) for line in (FIXTURES / case["merges"]).read_text(encoding="utf-8").splitlines()[1:]]
    assert spelled(result.merges) == fork
    with pytest.raises(ValueError, match="not both"):
        train_superbpe(corpus, case["vocab_size"], transition=10, pattern=STAGE1_PATTERN, pre_tokenizer=stage1)
