# Scoring of accepted pairs per record set, as neardup eval scores groups (CORE 2020 metrics).
import pickle, collections
docs, cands, lab = pickle.load(open('./data.pkl','rb'))
rows = pickle.load(open('./rows.pkl','rb'))
idx = {d['id']: i for i, d in enumerate(docs)}
L = [set(idx[o] for o in d['dups']) for d in docs]
SETS = sorted(set(d['set'] for d in docs))
def fmt(s): return f"acc {s['acc']:.4f} mF1 {s['mf1']:.4f} P {s['P']:.3f} R {s['R']:.3f}"
def counts_by_set(accepted):
    n = len(docs); parent = list(range(n))
    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]; i = parent[i]
        return i
    for x, y in accepted: parent[find(x)] = find(y)
    root = [find(i) for i in range(n)]
    size = collections.Counter(root)
    out = {s: [0,0,0,0,0,0] for s in SETS}  # tp fp tn fn correct cnt
    for i, d in enumerate(docs):
        c = out[d['set']]
        p = size[root[i]] - 1
        hits = sum(1 for j in L[i] if root[j] == root[i]); l = len(L[i])
        c[4] += hits == l == p; c[5] += 1
        if p and l and hits == l: c[0] += 1
        elif p: c[1] += 1
        elif l: c[3] += 1
        else: c[2] += 1
    return out
def metrics(c):
    tp,fp,tn,fn,correct,cnt = c
    f = lambda a,b: a/b if b else 0
    P, R = f(tp, tp+fp), f(tp, tp+fn); F1 = f(2*P*R, P+R)
    P2, R2 = f(tn, tn+fn), f(tn, tn+fp); F2 = f(2*P2*R2, P2+R2)
    return dict(acc=correct/cnt, mf1=(F1+F2)/2, P=P, R=R, n=cnt)
def merged(out, sets):
    return [sum(out[s][k] for s in sets) for k in range(6)]
