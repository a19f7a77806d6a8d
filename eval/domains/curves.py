#!/usr/bin/env python3
"""Learning curves of the learned rule on a domain left out: N pairs of the domain labelled by
`neardup label` (active: the pairs the model is least sure of), against N candidate pairs drawn
at random, for each N; each set of labels moves a model fitted without the domain (BASELINE, the
line to beat) towards them (`neardup label` and `neardup train --labels --prior BASELINE`), and
the domain is deduplicated with the result and scored (macro-F1, CORE 2020 metrics). The domain's
own labels answer for the person.

    eval/domains/curves.py DOMAIN.jsonl --baseline MODEL.json [--counts 25 50 100 200] [--out DIR]
"""
import argparse
import json
import os
import random
import subprocess
import sys


def groups_of(path):
    """Each record's labelled group (records joined by labels, directly or through others)."""
    parent = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    with open(path) as f:
        for line in f:
            record = json.loads(line)
            for other in record.get("labelled_duplicates") or []:
                parent[root(record["core_id"])] = root(other)
            root(record["core_id"])
    return {x: root(x) for x in parent}


def score(neardup, domain, model, out):
    run = os.path.join(out, "run")
    subprocess.run([neardup, "dedup", domain, "-q", "--match", "meaning", "--confirm-model",
                    model, "--out", run], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([neardup, "eval", "--truth", domain, "--pred", run, "--json",
                    run + ".eval.json"], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(run + ".eval.json"))["macro_f1"]


def label_actively(neardup, domain, labels, baseline, model, count, same, transcript):
    """Answers `neardup label`, asking by `baseline` moved by the answers, until `labels` holds
    `count` answers, then quits."""
    have = sum(1 for _ in open(labels)) if os.path.exists(labels) else 0
    session = subprocess.Popen([neardup, "label", domain, "--labels", labels, "--out", model,
                                "--match", "meaning", "--confirm-model", baseline],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    pair, line = [], ""
    while True:
        char = session.stdout.read(1)
        if not char:
            break
        line += char
        transcript.write(char)
        if line.startswith(("A ", "B ")) and char == "\n":
            pair.append(line[2:].split(":")[0])
        if char == "\n":
            line = ""
        elif line.endswith("[y/n/s/q] "):
            answer = "q" if have >= count else ("y" if same(*pair) else "n")
            have += answer != "q"
            session.stdin.write(answer + "\n")
            transcript.write(answer + "\n")
            pair, line = [], ""
    session.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("domain")
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--counts", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--out", default="eval/domains/cache/curves")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    neardup = os.environ.get("NEARDUP", "target/release/neardup")
    name = os.path.basename(args.domain).rsplit(".", 1)[0]
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    group = groups_of(args.domain)
    same = lambda a, b: group.get(a, a) == group.get(b, b)

    # The candidates `label` chooses among: the default search's, as a run writes them.
    run = os.path.join(out, "candidates")
    subprocess.run([neardup, "dedup", args.domain, "-q", "--out", run, "--candidates", "jsonl"],
                   check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(run, "candidates.jsonl")) as f:
        candidates = [(c["id_a"], c["id_b"]) for c in map(json.loads, f)]
    shuffled = random.Random(args.seed).sample(candidates, len(candidates))

    print(f"{name}: baseline (fitted without it) {score(neardup, args.domain, args.baseline, out):.4f}")
    print(f"{'labels':>6} {'active':>8} {'random':>8}")
    active_labels = os.path.join(out, "active.jsonl")
    if os.path.exists(active_labels):
        os.remove(active_labels)
    with open(os.path.join(out, "transcript.txt"), "w") as transcript:
        for count in args.counts:
            model = os.path.join(out, f"active-{count}.json")
            label_actively(neardup, args.domain, active_labels, args.baseline, model, count, same,
                           transcript)
            active = score(neardup, args.domain, model, out) if os.path.exists(model) else float("nan")
            # As many pairs drawn at random, with both kinds among them.
            random_labels = os.path.join(out, f"random-{count}.jsonl")
            with open(random_labels, "w") as f:
                for a, b in shuffled[:count]:
                    f.write(json.dumps({"id_a": a, "id_b": b, "duplicate": same(a, b)}) + "\n")
            random_model = os.path.join(out, f"random-{count}.json")
            trained = subprocess.run([neardup, "train", "-q", "--labels", random_labels, "--corpus",
                                      args.domain, "--prior", args.baseline, "--out", random_model],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            chance = score(neardup, args.domain, random_model, out) if trained.returncode == 0 else float("nan")
            print(f"{count:>6} {active:>8.4f} {chance:>8.4f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
