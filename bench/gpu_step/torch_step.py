"""The wide MLP step of gpu_step_bench in PyTorch, on the same GPU.

784-1024-1024-10, ReLU, softmax cross-entropy, SGD(lr=0.01), batch 4096,
synthetic data already on the device; float32 with TF32 off (PyTorch's
default for matmul), the same as dtf's SGEMM. Prints one JSON object.
"""
import argparse
import json
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=4096)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    torch.manual_seed(7)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(a.batch, 784, device=dev) * 2 - 1
    y = torch.randint(0, 10, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        # dtf's step hands its loss to the host; so does this one.
        return loss.item()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "steps_per_sec": a.steps / seconds,
        "examples_per_sec": a.batch * a.steps / seconds,
    }))


if __name__ == "__main__":
    main()
