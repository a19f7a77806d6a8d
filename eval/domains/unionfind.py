"""Connected components of labelled or accepted pairs, shared by build.py and pairs.py."""


def roots(n, pairs):
    """The root of each of `n` elements once every pair (i, j) is joined: members of one
    group share a root."""
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, j in pairs:
        parent[find(i)] = find(j)
    return [find(i) for i in range(n)]
