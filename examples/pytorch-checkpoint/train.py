"""A small CPU training loop that checkpoints through Plinth's staging protocol and resumes.

Every --every steps it saves model and optimizer state with torch.save into the staging directory
and commits the step (python/plinth_checkpoint.py); `plinth checkpoint agent` moves committed steps
to Plinth. With --resume it fetches the newest complete checkpoint (`plinth checkpoint restore
--latest`, from the nearest tier) and continues from it: the result is the same model, bit for bit,
as a run that was never interrupted. See README.md beside this file.
"""

import argparse
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python"))
import plinth_checkpoint as ckpt  # noqa: E402

FEATURES = 32


def batch(step):
    """The step's batch, from its own seed: a resumed run sees the same data as an uninterrupted one."""
    generator = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(64, FEATURES, generator=generator)
    y = x.sum(dim=1, keepdim=True).sin() + 0.01 * torch.randn(64, 1, generator=generator)
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--staging", required=True, help="staging directory on local disk")
    parser.add_argument("--dest", required=True, help="the agent's --dest in the cluster")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=int, default=10, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="start from the newest complete checkpoint")
    parser.add_argument("--stop-at", type=int, default=0, help="exit abruptly after this step (as a killed job)")
    parser.add_argument("--final", help="save the final model state here")
    parser.add_argument("--plinth-arg", action="append", default=[], help="passed to the plinth CLI (e.g. --server=HOST:PORT)")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    start = 0
    if args.resume:
        step = ckpt.latest(args.staging, args.dest, plinth_args=args.plinth_arg)
        if step is not None:
            with tempfile.TemporaryDirectory() as restored:
                info = ckpt.restore(args.dest, restored, step=step, staging=args.staging, plinth_args=args.plinth_arg)
                state = torch.load(os.path.join(restored, "state.pt"))
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            start = state["step"]
            print("resumed from step %d (%s tier)" % (start, info["tier"]), flush=True)

    for step in range(start + 1, args.steps + 1):
        x, y = batch(step)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step % args.every == 0:
            directory = ckpt.tmp_dir(args.staging, step)
            torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()},
                       os.path.join(directory, "state.pt"))
            # unchanged between steps: the agent links it to the previous step's copy instead of uploading it
            with open(os.path.join(directory, "config.json"), "w") as config:
                config.write('{"features": %d, "lr": 0.01}\n' % FEATURES)
            ckpt.commit(args.staging, step)
            print("step %d: loss %.6f, checkpoint committed" % (step, loss.item()), flush=True)
        if step == args.stop_at:
            os._exit(9)  # no cleanup, as a job killed by its scheduler

    if args.final:
        torch.save(model.state_dict(), args.final)


if __name__ == "__main__":
    main()
