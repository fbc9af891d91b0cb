"""Reference implementation of the seed tutorial's own model and training loop.

This module reproduces, as faithfully as possible, the code of section 5 ("动手实现") of the seed
document ``/work/shared/seed/attention-tutorial.zh.txt``: the character-level date task
(``DD-MM-YYYY`` -> ``YYYY年MM月DD日``), ``ScaledDotProductAttention``, ``AttentionSeq2Seq`` (GRU
encoder, per-step GRU decoder fed ``[embedding; context]``, query = previous decoder hidden state,
teacher forcing 0.5 decided once per step) and its training loop (batch 32, shuffle, Adam lr 1e-3,
cross-entropy over ``output[:, 1:]`` vs ``trg[:, 1:]``, gradient clipping at 1.0). Benchmarks use it
as the baseline that attnlab is compared against, so it deliberately keeps the tutorial's
inefficiencies (a Python loop over decoder steps, a zero-filled ``outputs`` tensor whose step 0 is
left empty, one-sample-at-a-time inference with ``.item()``) and its quirks (the generator makes
impossible dates such as ``31-02-2024``; there is no held-out evaluation in the tutorial itself).

It is self-contained: it imports only ``torch`` and the standard library, never ``attnlab``.

Deviations from the tutorial, each the smallest change that makes the code run or be sound:

1. ``PAD`` was used (``ignore_index=output_char2idx['PAD']``) but never defined. It is added to the
   output vocabulary and exported as the constant ``PAD``; the loss uses ``ignore_index=PAD``.
   PAD is appended *after* the tutorial's symbols, so every tutorial index is unchanged
   (SOS=0, EOS=1, digits 2..11, 年月日 12..14, PAD=15). The task's sequences all have the same
   length, so PAD never actually occurs in the data.
2. The tutorial built ``output_char2idx``/``output_idx2char`` first, used ``output_char2idx['SOS']``
   inside ``DateDataset``, and only afterwards prepended SOS/EOS and rebuilt the mappings. Here the
   output vocabulary (``['SOS', 'EOS'] + characters + ['PAD']``) is complete before the mappings are
   built, once.
3. The tutorial used ``numpy.random`` (``np.random.randint`` in the generator, ``np.random.random()``
   for teacher forcing). numpy is not a dependency here, so Python's ``random`` is used instead with
   the same semantics: ``rng.randint(1, 31)`` is inclusive and equals ``np.random.randint(1, 32)``
   (likewise month 1..12, year 2000..2030), and ``random.random() < ratio`` decides teacher forcing.
   ``generate_date_pair`` takes an explicit ``random.Random`` and ``DateDataset`` a ``seed`` so data
   sets are reproducible; teacher forcing draws from the global ``random`` as the tutorial drew from
   the global ``np.random``.
4. Harness additions not in the (truncated) tutorial: ``train_epoch`` wraps the loop body of one
   epoch and returns ``(avg_loss, samples_seen)``; ``make_reference(seed)`` seeds
   ``torch.manual_seed(seed)`` (and ``random.seed(seed)`` for teacher forcing) and builds
   model/optimizer/criterion with the tutorial's hyper-parameters; ``predict_one`` puts the model in
   ``eval()`` mode (so the attention dropout is off) and calls the tutorial's ``inference``.

Run ``python benchmarks/seed_reference.py`` to train 2 epochs on 3000 samples and measure speed and
exact match of per-sample inference on 200 freshly generated dates.
"""

from __future__ import annotations

import random
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset

# ---------------------------------------------------------------------------------------------
# 5.1 Character sets and mappings
# ---------------------------------------------------------------------------------------------
input_characters = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "-"]
output_characters = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "年", "月", "日"]
# Fix (1)+(2): the special symbols are in the vocabulary before any mapping is built.
output_characters = ["SOS", "EOS"] + output_characters + ["PAD"]

input_char2idx = {ch: i for i, ch in enumerate(input_characters)}
input_idx2char = {i: ch for i, ch in enumerate(input_characters)}
output_char2idx = {ch: i for i, ch in enumerate(output_characters)}
output_idx2char = {i: ch for i, ch in enumerate(output_characters)}

SOS = output_char2idx["SOS"]
EOS = output_char2idx["EOS"]
PAD = output_char2idx["PAD"]

# Hyper-parameters (tutorial 5.4)
HIDDEN_SIZE = 128
EMBEDDING_DIM = 64
BATCH_SIZE = 32
NUM_EPOCHS = 20
LEARNING_RATE = 0.001


def generate_date_pair(rng: random.Random) -> tuple[str, str]:
    """One (input, output) pair exactly as the tutorial (impossible dates such as 31-02 included)."""
    day = rng.randint(1, 31)  # == np.random.randint(1, 32)
    month = rng.randint(1, 12)  # == np.random.randint(1, 13)
    year = rng.randint(2000, 2030)  # == np.random.randint(2000, 2031)
    input_str = f"{day:02d}-{month:02d}-{year}"
    output_str = f"{year}年{month:02d}月{day:02d}日"
    return input_str, output_str


class DateDataset(Dataset):
    def __init__(self, num_samples: int = 5000, seed: int = 0):
        self.num_samples = num_samples
        rng = random.Random(seed)
        self.data = [generate_date_pair(rng) for _ in range(num_samples)]

    def __len__(self):
        return self.num_samples

    def __getitem__(self, idx):
        input_str, output_str = self.data[idx]
        # Convert strings to index sequences
        input_seq = [input_char2idx[ch] for ch in input_str]
        output_seq = [output_char2idx[ch] for ch in output_str]
        # Add SOS and EOS
        output_seq = [output_char2idx["SOS"]] + output_seq + [output_char2idx["EOS"]]
        return torch.tensor(input_seq, dtype=torch.long), torch.tensor(output_seq, dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# 5.2 Scaled dot-product attention
# ---------------------------------------------------------------------------------------------
class ScaledDotProductAttention(nn.Module):
    """Scaled dot-product attention.

    query [B, Lq, d_k], keys [B, Lk, d_k], values [B, Lk, d_v], mask optional [B, 1, Lk]
    (positions where mask == 0 are masked). Returns (context [B, Lq, d_v], weights [B, Lq, Lk]).
    """

    def __init__(self, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, keys, values, mask=None):
        d_k = keys.size(-1)
        # 1. dot-product scores: [B, L_q, D] x [B, D, L_k] -> [B, L_q, L_k]
        scores = torch.matmul(query, keys.transpose(-2, -1))
        # 2. scale
        scores = scores / torch.sqrt(torch.tensor(d_k, dtype=torch.float32))
        # 3. mask
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        # 4. softmax -> weights (with dropout)
        attention_weights = nn.functional.softmax(scores, dim=-1)
        attention_weights = self.dropout(attention_weights)
        # 5. weighted sum -> context
        context = torch.matmul(attention_weights, values)  # [B, L_q, D_v]
        return context, attention_weights


# ---------------------------------------------------------------------------------------------
# 5.3 Seq2Seq with attention
# ---------------------------------------------------------------------------------------------
class AttentionSeq2Seq(nn.Module):
    def __init__(self, input_vocab_size, output_vocab_size, hidden_size=HIDDEN_SIZE, embedding_dim=EMBEDDING_DIM):
        super().__init__()
        self.hidden_size = hidden_size
        # Encoder
        self.encoder_embedding = nn.Embedding(input_vocab_size, embedding_dim)
        self.encoder_gru = nn.GRU(embedding_dim, hidden_size, batch_first=True)
        # Decoder: input is [embedding; context]
        self.decoder_embedding = nn.Embedding(output_vocab_size, embedding_dim)
        self.decoder_gru = nn.GRU(embedding_dim + hidden_size, hidden_size, batch_first=True)
        self.attention = ScaledDotProductAttention()
        # Output layer: decoder GRU output -> vocabulary
        self.fc_out = nn.Linear(hidden_size, output_vocab_size)

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        # src: [batch_size, src_len]; trg: [batch_size, trg_len]
        batch_size = src.size(0)
        trg_len = trg.size(1)
        output_vocab_size = self.fc_out.out_features

        outputs = torch.zeros(batch_size, trg_len, output_vocab_size).to(src.device)

        # --- encode ---
        embedded_src = self.encoder_embedding(src)  # [B, SRC_LEN, EMBED_DIM]
        encoder_outputs, hidden = self.encoder_gru(embedded_src)  # [B, SRC_LEN, HIDDEN]
        decoder_hidden = hidden
        decoder_input = trg[:, 0].unsqueeze(1)  # SOS, [B, 1]

        # --- decode (autoregressive) ---
        for t in range(1, trg_len):
            embedded_dec = self.decoder_embedding(decoder_input)  # [B, 1, EMBED_DIM]
            # query: previous decoder hidden [1, B, H] -> [B, 1, H]; keys = values = encoder outputs
            query = decoder_hidden.transpose(0, 1)
            context, attention_weights = self.attention(query, encoder_outputs, encoder_outputs)
            gru_input = torch.cat((embedded_dec, context), dim=-1)  # [B, 1, EMBED_DIM + HIDDEN]
            decoder_output, decoder_hidden = self.decoder_gru(gru_input, decoder_hidden)
            output = self.fc_out(decoder_output.squeeze(1))  # [B, VOCAB_SIZE]
            outputs[:, t, :] = output
            # teacher forcing, decided once per step for the whole batch
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            decoder_input = trg[:, t].unsqueeze(1) if teacher_force else top1.unsqueeze(1)

        return outputs

    def inference(self, src, max_len=15):
        """Greedy generation of ONE sample (batch 1: uses .item()), stops at EOS."""
        with torch.no_grad():
            batch_size = src.size(0)
            embedded_src = self.encoder_embedding(src)
            encoder_outputs, hidden = self.encoder_gru(embedded_src)

            decoder_hidden = hidden
            decoder_input = torch.tensor([[output_char2idx["SOS"]]] * batch_size).to(src.device)

            generated = []
            for _t in range(max_len):
                embedded_dec = self.decoder_embedding(decoder_input)
                query = decoder_hidden.transpose(0, 1)
                context, _ = self.attention(query, encoder_outputs, encoder_outputs)
                gru_input = torch.cat((embedded_dec, context), dim=-1)
                decoder_output, decoder_hidden = self.decoder_gru(gru_input, decoder_hidden)
                output = self.fc_out(decoder_output.squeeze(1))
                next_token = output.argmax(1).item()
                if next_token == output_char2idx["EOS"]:
                    break
                generated.append(output_idx2char[next_token])
                decoder_input = torch.tensor([[next_token]]).to(src.device)
            return "".join(generated)


# ---------------------------------------------------------------------------------------------
# 5.4 Training (one epoch of the tutorial's loop) and harness helpers
# ---------------------------------------------------------------------------------------------
def train_epoch(model, loader, optimizer, criterion):
    """One epoch of the tutorial's training loop. Returns (avg_loss, samples_seen)."""
    model.train()
    total_loss = 0
    samples_seen = 0
    for _batch_idx, (src_batch, trg_batch) in enumerate(loader):
        optimizer.zero_grad()
        output = model(src_batch, trg_batch, teacher_forcing_ratio=0.5)  # [B, TRG_LEN, VOCAB]
        # skip step 0 (SOS is an input, never predicted)
        output = output[:, 1:].reshape(-1, output.shape[-1])  # [B*(TRG_LEN-1), VOCAB]
        target = trg_batch[:, 1:].reshape(-1)  # [B*(TRG_LEN-1)]
        loss = criterion(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)
        optimizer.step()
        total_loss += loss.item()
        samples_seen += src_batch.size(0)
    avg_loss = total_loss / len(loader)
    return avg_loss, samples_seen


def predict_one(model, date_str: str) -> str:
    """Translate one DD-MM-YYYY string with the tutorial's per-sample ``inference``."""
    model.eval()
    src = torch.tensor([[input_char2idx[ch] for ch in date_str]], dtype=torch.long)
    return model.inference(src)


def make_reference(seed: int):
    """Seeded (model, optimizer, criterion) with the tutorial's hyper-parameters."""
    torch.manual_seed(seed)
    random.seed(seed)  # teacher-forcing draws (the tutorial's global np.random)
    model = AttentionSeq2Seq(len(input_characters), len(output_characters), HIDDEN_SIZE, EMBEDDING_DIM)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)
    return model, optimizer, criterion


def make_loader(num_samples: int = 3000, seed: int = 0) -> DataLoader:
    """The tutorial's DataLoader: DateDataset(3000), batch 32, shuffle."""
    return DataLoader(DateDataset(num_samples, seed=seed), batch_size=BATCH_SIZE, shuffle=True)


def main(epochs: int = 2, num_samples: int = 3000, eval_samples: int = 200, seed: int = 0):
    model, optimizer, criterion = make_reference(seed)
    loader = make_loader(num_samples, seed=seed)
    print(f"seed reference: {num_samples} samples, batch {BATCH_SIZE}, torch threads {torch.get_num_threads()}")
    for epoch in range(epochs):
        t0 = time.perf_counter()
        avg_loss, seen = train_epoch(model, loader, optimizer, criterion)
        dt = time.perf_counter() - t0
        print(f"Epoch [{epoch + 1}/{epochs}], Loss: {avg_loss:.4f}, {dt:.2f} s, {seen / dt:.0f} samples/s")

    rng = random.Random(seed + 10_000)  # fresh dates, not the training stream
    pairs = [generate_date_pair(rng) for _ in range(eval_samples)]
    t0 = time.perf_counter()
    correct = sum(predict_one(model, src) == trg for src, trg in pairs)
    dt = time.perf_counter() - t0
    print(
        f"per-sample inference: {eval_samples} dates in {dt:.2f} s "
        f"({eval_samples / dt:.0f} samples/s), exact match {correct / eval_samples:.1%}"
    )
    for src, trg in pairs[:3]:
        print(f"  {src} -> {predict_one(model, src)} (expected {trg})")


if __name__ == "__main__":
    main()
