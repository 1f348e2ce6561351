#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch reference for `azbench train`: training samples/s of the same network, loss and
optimiser as the C trainer (train/trainer.h), on the CPU with one thread.

Network (net/model.h): h = relu(W_in x + b_in); R blocks of h = relu(h + W2 relu(W1 h + b1) + b2);
policy logits = W_p h + b_p; value = tanh(w_v h + b_v).
Loss: mean soft-target cross-entropy + mean squared value error + l2 * sum(weights^2) (weights
only, not biases, added to the loss as the C trainer does). Optimiser: Adam (0.9, 0.999, 1e-8).

Usage: torch_train_bench.py --point NAME,D,A,H,R,B,LR,L2 [--point ...] --seconds S
(D inputs, A actions, H hidden, R blocks, B batch, LR Adam learning rate, L2 weight penalty).
Prints one JSON object per point on stdout:
  {"point": NAME, "batch": B, "steps": N, "seconds": T, "samples_per_s": V, "torch": VERSION}
With --probe, prints {"torch": VERSION, "threads": 1} and exits (used to find an interpreter).
Exit status 3 when torch cannot be imported.
"""
import argparse
import json
import os
import sys
import time

# One thread everywhere, as the C trainer: set before torch (and its BLAS) start.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = "1"

try:
    import torch
except ImportError as e:  # the C side reports "torch not available"
    print(json.dumps({"error": "torch not available: %s" % e}))
    sys.exit(3)


class Net(torch.nn.Module):
    """The residual MLP of net/model.h."""

    def __init__(self, d, a, h, r):
        super().__init__()
        self.inp = torch.nn.Linear(d, h)
        self.fc1 = torch.nn.ModuleList(torch.nn.Linear(h, h) for _ in range(r))
        self.fc2 = torch.nn.ModuleList(torch.nn.Linear(h, h) for _ in range(r))
        self.policy = torch.nn.Linear(h, a)
        self.value = torch.nn.Linear(h, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for f1, f2 in zip(self.fc1, self.fc2):
            h = torch.relu(h + f2(torch.relu(f1(h))))
        return self.policy(h), torch.tanh(self.value(h)).squeeze(1)


def batch_data(d, a, b, gen):
    """A fixed random minibatch: 0/1 planes, target distributions, results in {-1, 0, 1}."""
    x = (torch.rand(b, d, generator=gen) < 0.3).float()
    pi = torch.rand(b, a, generator=gen)
    pi = pi / pi.sum(1, keepdim=True)
    z = torch.randint(-1, 2, (b,), generator=gen).float()
    return x, pi, z


def measure(d, a, h, r, b, seconds, lr, l2):
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    net = Net(d, a, h, r)
    weights = [p for n, p in net.named_parameters() if n.endswith("weight")]
    opt = torch.optim.Adam(net.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    x, pi, z = batch_data(d, a, b, gen)

    def step():
        logits, v = net(x)
        loss = -(pi * torch.log_softmax(logits, 1)).sum(1).mean() + ((v - z) ** 2).mean()
        loss = loss + l2 * sum((w * w).sum() for w in weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):  # warm-up: allocator, Adam state
        step()
    steps = 0
    t0 = time.perf_counter()
    el = 0.0
    while steps < 2 or el < seconds:
        step()
        steps += 1
        el = time.perf_counter() - t0
    return steps, el


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--point", action="append", default=[],
                    help="NAME,D,A,H,R,B,LR,L2 (repeatable)")
    ap.add_argument("--seconds", type=float, default=0.5, help="measurement per point")
    ap.add_argument("--probe", action="store_true", help="report the torch version and exit")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.probe:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}))
        return 0
    for p in args.point:
        try:
            name, d, a, h, r, b, lr, l2 = p.split(",")
            d, a, h, r, b, lr, l2 = int(d), int(a), int(h), int(r), int(b), float(lr), float(l2)
        except ValueError:
            ap.error("--point wants NAME,D,A,H,R,B,LR,L2, got %r" % p)
        steps, el = measure(d, a, h, r, b, args.seconds, lr, l2)
        print(json.dumps({"point": name, "batch": b, "steps": steps, "seconds": el,
                          "samples_per_s": b * steps / el, "torch": torch.__version__}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
