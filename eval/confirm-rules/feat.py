import pickle, re
docs, cands, lab = pickle.load(open('./data.pkl','rb'))
NUM = re.compile(r'^(\d+|[ivxlc]+)$')
ROMAN = re.compile(r'^(i|ii|iii|iv|v|vi|vii|viii|ix|x|xi|xii)$')
MARK = {'phase','part','stage','type','grade','study','trial'}
def jac(A,B):
    u = len(A|B); return len(A&B)/u if u else 0.0
rows = []
for x, y in cands:
    a, b = docs[x], docs[y]
    A, B = a['all'], b['all']
    inter = len(A & B); m = min(len(A), len(B))
    if m == 0: continue
    cont = inter / m
    if cont < 0.6 and (x,y) not in lab: continue
    J = inter / len(A | B)
    TJ = jac(a['tw'], b['tw'])
    diff = A ^ B
    nums = sorted(w for w in diff if w.isdigit() or ROMAN.match(w))
    rows.append((x, y, J, cont, TJ, len(A), len(B), bool(a['abstract']), bool(b['abstract']), tuple(nums), (x,y) in lab))
print(len(rows), sum(r[-1] for r in rows))
pickle.dump(rows, open('./rows.pkl','wb'))
