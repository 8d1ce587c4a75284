"""Training from WebDataset shards through the Plinth mount, with the standard library and torch only.

ShardDataset is a torch IterableDataset: each epoch the shard list is shuffled with (seed, epoch),
split across DataLoader workers (and ranks, with --rank/--world-size), each worker streams its
shards with tarfile (one sequential read per shard: no per-sample open), groups members into
samples by WebDataset's key rule (path up to the first dot of the file name), and shuffles them
through a bounded buffer seeded by (seed, epoch, worker). The same seed gives the same order.

    /usr/bin/python3 examples/webdataset/train.py --shards '/mnt/plinth/datasets/train/shard-*.tar' \\
        --workers 2 --epochs 2 --record /tmp/seen.json
"""

import argparse
import glob
import json
import random
import tarfile

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


def split_key(name):
    """WebDataset's rule: key = path up to the first dot of the file name; extension = the rest (lower-cased)."""
    directory, _, file_name = name.rpartition("/")
    if file_name.startswith(".") or "." not in file_name:
        return None, None
    stem, _, extension = file_name.partition(".")
    return (directory + "/" if directory else "") + stem, extension.lower()


def samples_of(shard):
    """The samples of one shard, streamed: consecutive members with one key are one sample."""
    with open(shard, "rb", buffering=1 << 20) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
        key, sample = None, {}
        for member in tar:
            if not member.isfile():
                continue
            member_key, extension = split_key(member.name)
            if member_key is None:
                continue
            if member_key != key and sample:
                yield key, sample
                sample = {}
            key = member_key
            sample[extension] = tar.extractfile(member).read()
        if sample:
            yield key, sample


class ShardDataset(IterableDataset):
    def __init__(self, shards, seed=0, shuffle_buffer=64, rank=0, world_size=1):
        self.shards = sorted(shards)
        self.seed, self.shuffle_buffer, self.rank, self.world_size = seed, shuffle_buffer, rank, world_size
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        order = list(self.shards)
        random.Random(self.seed * 1000003 + self.epoch).shuffle(order)
        slot, slots = self.rank * workers + worker, self.world_size * workers
        mine = order[slot::slots]
        rng = random.Random((self.seed * 1000003 + self.epoch) * 31 + slot)
        buffer = []
        for shard in mine:
            for sample in samples_of(shard):
                if len(buffer) < self.shuffle_buffer:
                    buffer.append(sample)
                    continue
                pick = rng.randrange(len(buffer))
                buffer[pick], sample = sample, buffer[pick]
                yield sample
        rng.shuffle(buffer)
        yield from buffer


def to_tensors(sample):
    key, members = sample
    features = torch.tensor(list(members["input"][:16].ljust(16, b"\0")), dtype=torch.float32) / 255.0
    label = torch.tensor([float(members["cls"].decode().strip())])
    return key, features, label


def collate(batch):
    keys = [key for key, _, _ in batch]
    return keys, torch.stack([f for _, f, _ in batch]), torch.stack([l for _, _, l in batch])


class Tensors(IterableDataset):
    def __init__(self, samples):
        self.samples = samples

    def __iter__(self):
        for sample in self.samples:
            yield to_tensors(sample)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", required=True, help="a glob of shard paths (through the mount)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--record", help="write the keys each epoch saw, in order, to this JSON file")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    shards = glob.glob(args.shards)
    if not shards:
        raise SystemExit("no shard matches " + args.shards)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    seen = []
    for epoch in range(args.epochs):
        dataset = ShardDataset(shards, seed=args.seed)
        dataset.set_epoch(epoch)  # before the workers start: each gets a copy with this epoch
        loader = DataLoader(Tensors(dataset), batch_size=args.batch_size, num_workers=args.workers, collate_fn=collate)
        keys, steps, loss = [], 0, None
        for batch_keys, features, labels in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(features), labels)
            loss.backward()
            optimizer.step()
            keys.extend(batch_keys)
            steps += 1
        print("epoch %d: %d samples in %d steps, last loss %.4f" % (epoch, len(keys), steps, loss.item() if loss is not None else 0.0),
              flush=True)
        seen.append(keys)
    if args.record:
        with open(args.record, "w") as out:
            json.dump(seen, out)


if __name__ == "__main__":
    main()
