"""A drop-in for the `tiktoken` module over bpeforge's encoder: `import bpeforge.tiktoken as tiktoken`.

Same names, arguments, ids and errors as tiktoken 0.14.0; `gpt2`, `r50k_base`,
`cl100k_base` and `o200k_base` ship with the package and load offline. See
docs/tiktoken.md.

>>> enc = get_encoding("o200k_base")
>>> enc.encode("hello world")
[24912, 2375]
>>> enc.decode([24912, 2375])
'hello world'
>>> encoding_for_model("gpt-4").name
'cl100k_base'
"""

from bpeforge.tiktoken.encoding import Encoding
from bpeforge.tiktoken.model import encoding_for_model, encoding_name_for_model
from bpeforge.tiktoken.registry import get_encoding, list_encoding_names

__all__ = ["Encoding", "encoding_for_model", "encoding_name_for_model", "get_encoding", "list_encoding_names"]
