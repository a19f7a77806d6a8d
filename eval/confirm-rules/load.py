import json, re, collections, itertools, pickle, sys
WORD = re.compile(r'\w+')
def words(t): return [w.lower() for w in WORD.findall(t)]
docs = []
for l in open('/work/shared/data/bibdedupe-core.jsonl'):
    r = json.loads(l)
    t = r['processed_title'] or ''; a = r['processed_abstract'] or ''
    docs.append(dict(id=r['core_id'], set=r['core_id'].split('/')[0], title=t, abstract=a,
        cat=r['cat'], dups=r['labelled_duplicates'],
        tw=set(words(t)), aw=set(words(a)), all=set(words(t + ' ' + a)), seq=words(t+' '+a), tseq=words(t)))
n = len(docs)
df = collections.Counter(w for d in docs for w in d['all'])
inv = collections.defaultdict(list)
for i, d in enumerate(docs):
    for w in d['all']:
        if df[w] <= 400: inv[w].append(i)
shared = collections.Counter()
for w, lst in inv.items():
    for x, y in itertools.combinations(lst, 2):
        shared[(x, y)] += 1
cands = []
for (x, y), c in shared.items():
    A, B = docs[x]['all'], docs[y]['all']
    inter = len(A & B)
    m = min(len(A), len(B))
    if m and inter / m >= 0.4:
        cands.append((x, y))
# ensure all labelled pairs included
idx = {d['id']: i for i, d in enumerate(docs)}
lab = set()
for i, d in enumerate(docs):
    for o in d['dups']:
        j = idx[o]; lab.add((min(i, j), max(i, j)))
cs = set(cands)
print('cands', len(cs), 'labelled', len(lab), 'labelled in cands', len(lab & cs))
cs |= lab
pickle.dump((docs, sorted(cs), lab), open('./data.pkl', 'wb'))
