"""A deterministic synthetic token stream made from a seed: what the training suite's model learns.

Each sequence walks a fixed random Markov chain: every token has SUCCESSORS likely next tokens with fixed
probabilities. A model first learns the chain's unigram statistics, then its transitions, so the loss
falls from ln(vocab) towards the chain's entropy over a few dozen steps instead of staying flat.

Every micro-batch is generated on the CPU from (seed, step, micro-batch) alone, so a run resumed at step k
sees exactly the batches the uninterrupted run saw, on any device.
"""

from __future__ import annotations

from typing import Any

SUCCESSORS = 4
# the probabilities of a token's successors, most likely first
SUCCESSOR_WEIGHTS = (0.55, 0.25, 0.15, 0.05)


class TokenStream:
    def __init__(self, seed: int, vocab: int, seq_len: int, micro_batch: int) -> None:
        import torch

        self.seed, self.vocab, self.seq_len, self.micro_batch = seed, vocab, seq_len, micro_batch
        chain = torch.Generator().manual_seed(seed)
        self.successors = torch.randint(0, vocab, (vocab, SUCCESSORS), generator=chain)
        self.weights = torch.tensor(SUCCESSOR_WEIGHTS)

    def batch(self, step: int, micro: int) -> Any:
        """Token ids of one micro-batch, [micro_batch, seq_len + 1] (inputs and their next tokens)."""
        import torch

        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + step) * 1009 + micro)
        length = self.seq_len + 1
        picks = torch.multinomial(self.weights, self.micro_batch * length, True, generator=generator)
        picks = picks.view(self.micro_batch, length)
        tokens = torch.empty(self.micro_batch, length, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, self.vocab, (self.micro_batch,), generator=generator)
        rows = torch.arange(self.micro_batch)
        for position in range(1, length):
            tokens[:, position] = self.successors[tokens[:, position - 1], picks[rows, position]]
        return tokens

    def step_batches(self, step: int, micro_batches: int, device: str) -> list[Any]:
        return [self.batch(step, micro).to(device) for micro in range(micro_batches)]
