"""The id type of each stack's token files: the one its own preprocessing chooses, or one the user forces.

Ids come from the core packed as little-endian uint16 or uint32; Megatron's int32 has the bytes of uint32 for
every id below 2**31, which is every id a vocabulary has.
"""

from __future__ import annotations

UINT16_IDS = 1 << 16  # ids 0..65535

# The types each stack reads, the first the narrowest.
ALLOWED = {
    "megatron": ("uint16", "int32"),  # megatron.core DType has no uint32 (codes 1-8)
    "datatrove": ("uint16", "uint32"),  # token_size 2 or 4
    "llmc": ("uint16", "uint32"),  # header version 1 (GPT-2) or 7 (Llama 3)
    "nanogpt": ("uint16", "uint32"),  # train.py reads uint16; uint32 only when forced
    "olmo": ("uint16", "uint32"),
}
ITEMSIZE = {"uint16": 2, "uint32": 4, "int32": 4}


def choose_dtype(format: str, vocab_size: int, requested: str | None) -> str:
    """The dtype `format` gets for a vocabulary of `vocab_size`: as its stack chooses it, or `requested` when
    it fits the vocabulary and the stack reads it."""
    allowed = ALLOWED[format]
    if requested is not None:
        if requested not in allowed:
            raise ValueError(f"--format {format} stores ids as {' or '.join(allowed)}, not {requested}")
        if ITEMSIZE[requested] == 2 and vocab_size > UINT16_IDS:
            wide = allowed[1]
            raise ValueError(
                f"the vocabulary has {vocab_size:,} tokens; {requested} holds ids up to 65535: use --dtype {wide}"
            )
        return requested
    if format == "megatron":
        # preprocess_data.py: DType.optimal_dtype(vocab_size), uint16 below 65500 tokens, else int32.
        return "uint16" if vocab_size < 65500 else "int32"
    if format == "nanogpt" and vocab_size > UINT16_IDS:
        raise ValueError(
            f"nanoGPT's train.py reads uint16 ids, and the vocabulary has {vocab_size:,} tokens; "
            "pass --dtype uint32 and read the file with np.memmap(..., dtype=np.uint32)"
        )
    return allowed[0] if vocab_size <= UINT16_IDS else allowed[1]
