"""Looking at a tokenizer: the figures `bpeforge inspect` and `compare` print (`figures`), where it cuts a
text (`show`), pictures (`plots`), and tokens as people read them (`token_text`)."""
