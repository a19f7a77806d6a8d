//! From confirmed duplicate pairs to duplicate groups.
//!
//! Pairs are edges; a group is a connected component of two or more documents (single
//! linkage). Each group gets a representative: the member with the highest mean similarity to
//! the other members (ties: the smallest id), the document a curator would keep.
//!
//! Everything here is ordered by document id, never by input position, so the same corpus in
//! any order gives the same groups, members and representatives.

use petgraph::unionfind::UnionFind;
use rayon::prelude::*;

/// One duplicate group: indices into the corpus, members sorted by id.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Members, sorted by their id.
    pub members: Vec<u32>,
    /// The member to keep.
    pub representative: u32,
    /// The representative's mean similarity to the other members.
    pub representative_similarity: f64,
}

/// Groups the documents connected by `pairs` (indices into `ids`).
///
/// `similarity(x, y)` must be symmetric; it is called for every pair of members of a group to
/// choose the representative, so a group of `n` costs `n²/2` calls.
pub fn connected_groups<F>(ids: &[String], pairs: &[(u32, u32)], similarity: F) -> Vec<Group>
where
    F: Fn(u32, u32) -> f64 + Sync,
{
    let mut components = UnionFind::<u32>::new(ids.len());
    for &(x, y) in pairs {
        components.union(x, y);
    }
    let labels = components.into_labeling();
    let mut by_root: Vec<Vec<u32>> = vec![Vec::new(); ids.len()];
    for (doc, &root) in labels.iter().enumerate() {
        by_root[root as usize].push(doc as u32);
    }
    let mut groups: Vec<Group> = by_root
        .into_par_iter()
        .filter(|members| members.len() > 1)
        .map(|mut members| {
            members.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
            let (representative, representative_similarity) =
                choose_representative(&members, &similarity);
            Group {
                members,
                representative,
                representative_similarity,
            }
        })
        .collect();
    groups.sort_by(|a, b| ids[a.members[0] as usize].cmp(&ids[b.members[0] as usize]));
    groups
}

/// The member with the highest mean similarity to the others; `members` sorted by id, so the
/// first maximum is the smallest id.
pub fn choose_representative<F>(members: &[u32], similarity: &F) -> (u32, f64)
where
    F: Fn(u32, u32) -> f64,
{
    let n = members.len();
    let mut sums = vec![0.0f64; n];
    for i in 0..n {
        for j in i + 1..n {
            let s = similarity(members[i], members[j]);
            sums[i] += s;
            sums[j] += s;
        }
    }
    let mut best = 0;
    for i in 1..n {
        if sums[i] > sums[best] {
            best = i;
        }
    }
    let mean = if n > 1 {
        sums[best] / (n - 1) as f64
    } else {
        1.0
    };
    (members[best], mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn components_become_groups_and_singletons_are_left_out() {
        let ids = ids(&["a", "b", "c", "d", "e"]);
        let groups = connected_groups(&ids, &[(0, 1), (1, 2)], |_, _| 1.0);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].members, vec![0, 1, 2]);
    }

    #[test]
    fn representative_is_most_central_then_smallest_id() {
        // b is similar to both a and c, which are not similar to each other.
        let ids = ids(&["a", "b", "c"]);
        let sim = |x: u32, y: u32| if x == 1 || y == 1 { 0.9 } else { 0.1 };
        let groups = connected_groups(&ids, &[(0, 1), (1, 2)], sim);
        assert_eq!(groups[0].representative, 1);
        assert!((groups[0].representative_similarity - 0.9).abs() < 1e-12);
        // All equal: the smallest id wins, whatever its position in the input.
        let ids2 = vec!["z".to_string(), "m".to_string(), "q".to_string()];
        let groups = connected_groups(&ids2, &[(0, 1), (1, 2)], |_, _| 0.5);
        assert_eq!(ids2[groups[0].representative as usize], "m");
    }

    #[test]
    fn groups_are_ordered_by_their_smallest_id() {
        let ids = ids(&["d", "c", "b", "a"]);
        let groups = connected_groups(&ids, &[(0, 1), (2, 3)], |_, _| 1.0);
        assert_eq!(groups[0].members, vec![3, 2]);
        assert_eq!(groups[1].members, vec![1, 0]);
    }
}
