"""A tokenizer keeps working in processes forked after it ran in parallel.

PyTorch DataLoader workers and `multiprocessing` with the fork start method
fork a process that has already encoded with all cores; rayon's global pool
does not survive that and HF tokenizers hangs there. The check runs in a
subprocess with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import multiprocessing, pickle, bpeforge

    vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"or", 258: b" wor"}
    tok = bpeforge.Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")], ["<|endoftext|>"])
    texts = ["hello world<|endoftext|>" * 200] * 64
    expected = tok.encode_batch(texts)  # all cores, in the parent, before forking

    def work(_):
        return tok.encode_batch(texts) == expected and tok.encode_batch(texts, num_threads=2) == expected

    if __name__ == "__main__":
        for method in ("fork", "spawn"):
            with multiprocessing.get_context(method).Pool(2) as pool:
                assert all(pool.map(work, range(4))), method
        assert pickle.loads(pickle.dumps(tok)).encode_batch(texts) == expected
        print("ok")
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method is the Linux default")
def test_parallel_encoding_after_fork_and_in_spawned_workers(tmp_path):
    script = tmp_path / "fork_check.py"
    script.write_text(SCRIPT)
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("encode_batch hung in a forked worker (the parent's thread pool was reused after fork)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
