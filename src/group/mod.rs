//! From confirmed duplicate pairs to duplicate groups.
//!
//! Pairs are edges between documents similar enough to be duplicates. How edges become groups
//! is the [`Linkage`]:
//! - `single`: connected components. Simple, but chains: A~B and B~C put A and C together
//!   however different they are (the seed-002 blog's "a..p", "b..p", ..., "p" collapse);
//! - `complete`: every two members of a group are similar (cliques, built greedily);
//! - `star`: every member is similar to the group's centre, which is its representative.
//!
//! Each group gets a representative: for single and complete linkage, the member with the
//! highest mean similarity to the other members (ties: the smallest id), the document a curator
//! would keep.
//!
//! Everything here is ordered by document id, never by input position, so the same corpus in
//! any order gives the same groups, members and representatives.

mod keep;

pub use keep::{Candidate, KeepPolicy, KeepValue, choose_kept};

use petgraph::unionfind::UnionFind;
use rayon::prelude::*;

/// The similarity at or above which `neardup groups` puts two documents together, unless told
/// (the design card's Jaccard threshold, on whichever measure is chosen).
pub const GROUPING_THRESHOLD: f64 = 0.7;

/// How similar pairs become groups.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Linkage {
    /// Connected components of the similarity graph.
    #[default]
    Single,
    /// Every pair of members is similar.
    Complete,
    /// Every member is similar to the representative.
    Star,
}

/// Groups the documents linked by `pairs` under `linkage`. `pairs` must hold every similar
/// pair (as the exact methods produce) for complete and star linkage to be exact.
pub fn linked_groups<F>(
    ids: &[String],
    pairs: &[(u32, u32)],
    linkage: Linkage,
    similarity: F,
) -> Vec<Group>
where
    F: Fn(u32, u32) -> f64 + Sync,
{
    if linkage == Linkage::Single {
        return connected_groups(ids, pairs, similarity);
    }
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); ids.len()];
    for &(x, y) in pairs {
        neighbours[x as usize].push(y);
        neighbours[y as usize].push(x);
    }
    for list in &mut neighbours {
        list.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        list.dedup();
    }
    // Best-connected documents seed groups first; ties by id, so input order never matters.
    let mut order: Vec<u32> = (0..ids.len() as u32)
        .filter(|&d| !neighbours[d as usize].is_empty())
        .collect();
    order.sort_by(|&a, &b| {
        neighbours[b as usize]
            .len()
            .cmp(&neighbours[a as usize].len())
            .then_with(|| ids[a as usize].cmp(&ids[b as usize]))
    });
    let linked = |x: u32, y: u32| {
        neighbours[x as usize]
            .binary_search_by(|n| ids[*n as usize].cmp(&ids[y as usize]))
            .is_ok()
    };
    let mut assigned = vec![false; ids.len()];
    let mut groups = Vec::new();
    for centre in order {
        if assigned[centre as usize] {
            continue;
        }
        let free: Vec<u32> = neighbours[centre as usize]
            .iter()
            .copied()
            .filter(|&n| !assigned[n as usize])
            .collect();
        let mut members = vec![centre];
        match linkage {
            Linkage::Star => members.extend(free),
            _ => {
                // Most similar first, so a clique keeps the closest documents.
                let mut free = free;
                free.sort_by(|&a, &b| {
                    similarity(centre, b)
                        .total_cmp(&similarity(centre, a))
                        .then_with(|| ids[a as usize].cmp(&ids[b as usize]))
                });
                for candidate in free {
                    if members.iter().all(|&m| linked(m, candidate)) {
                        members.push(candidate);
                    }
                }
            }
        }
        if members.len() < 2 {
            continue;
        }
        for &m in &members {
            assigned[m as usize] = true;
        }
        members.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        let (representative, representative_similarity) = if linkage == Linkage::Star {
            let sum: f64 = members
                .iter()
                .filter(|&&m| m != centre)
                .map(|&m| similarity(centre, m))
                .sum();
            (centre, sum / (members.len() - 1) as f64)
        } else {
            choose_representative(&members, &similarity)
        };
        groups.push(Group {
            members,
            representative,
            representative_similarity,
        });
    }
    groups.sort_by(|a, b| ids[a.members[0] as usize].cmp(&ids[b.members[0] as usize]));
    groups
}

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

/// In a group of more members than this, a member's mean similarity is taken over an evenly
/// spaced sample of about this many others: the cost grows with the group, not its square
/// (a group of 15,000 copies asked 112 million similarities).
pub const SIMILARITY_SAMPLE: usize = 512;

/// The similarities one group may ask for its representative: past this many members divided
/// by [`SIMILARITY_SAMPLE`] (65,536), the sample shrinks so that a group asks about this many
/// (a million copies of one record asked 512 million, 20 s of a 66 s run), down to
/// [`SMALLEST_SAMPLE`].
pub const SIMILARITY_BUDGET: usize = 1 << 25;

/// The fewest others a member's mean similarity is taken over.
pub const SMALLEST_SAMPLE: usize = 32;

/// The member with the highest mean similarity to the others (to a sample of them in a group
/// of more than [`SIMILARITY_SAMPLE`]); `members` sorted by id, so the first maximum is the
/// smallest id.
pub fn choose_representative<F>(members: &[u32], similarity: &F) -> (u32, f64)
where
    F: Fn(u32, u32) -> f64 + Sync,
{
    let n = members.len();
    if n > SIMILARITY_SAMPLE {
        return choose_by_sample(members, similarity);
    }
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

/// [`choose_representative`] over a large group: each member's mean similarity to an evenly
/// spaced sample of the others, members weighed on every core.
fn choose_by_sample<F>(members: &[u32], similarity: &F) -> (u32, f64)
where
    F: Fn(u32, u32) -> f64 + Sync,
{
    let size = (SIMILARITY_BUDGET / members.len()).clamp(SMALLEST_SAMPLE, SIMILARITY_SAMPLE);
    let step = members.len().div_ceil(size);
    let sample: Vec<u32> = members.iter().step_by(step).copied().collect();
    let mean = |member: u32| {
        let others = sample.iter().filter(|&&other| other != member);
        let (sum, count) = others.fold((0.0, 0usize), |(sum, count), &other| {
            (sum + similarity(member, other), count + 1)
        });
        sum / count as f64
    };
    // The highest mean, the first member of it where several share it.
    let (at, mean) = members
        .par_iter()
        .enumerate()
        .map(|(at, &member)| (at, mean(member)))
        .reduce(
            || (usize::MAX, f64::NEG_INFINITY),
            |a, b| match b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)) {
                std::cmp::Ordering::Greater => b,
                _ => a,
            },
        );
    (members[at], mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similarity::tests::SEED_SAMPLE;
    use crate::similarity::{jaccard, similar_pairs};
    use crate::text::Shingler;
    use rand::SeedableRng;
    use rand::seq::SliceRandom;

    /// Groups of `texts` (as sets of texts) at Jaccard ≥ `t` under `linkage`.
    fn group_texts(texts: &[&str], t: f64, linkage: Linkage) -> Vec<Vec<String>> {
        let shingler = Shingler::word_unigrams();
        let sets: Vec<Vec<u64>> = texts.iter().map(|t| shingler.shingle_set(t)).collect();
        let pairs: Vec<(u32, u32)> = similar_pairs(&sets, t).iter().map(|p| (p.0, p.1)).collect();
        let ids: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let mut groups: Vec<Vec<String>> = linked_groups(&ids, &pairs, linkage, |x, y| {
            jaccard(texts[x as usize], texts[y as usize])
        })
        .into_iter()
        .map(|g| g.members.iter().map(|&m| ids[m as usize].clone()).collect())
        .collect();
        groups.sort();
        groups
    }

    #[test]
    fn seed_sample_groups_for_every_input_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut texts = SEED_SAMPLE.to_vec();
        // {4, 5} and {1, 2, 3}; members listed by id (here the text itself).
        let expected = vec![
            vec![SEED_SAMPLE[3].to_string(), SEED_SAMPLE[4].to_string()],
            vec![
                SEED_SAMPLE[2].to_string(),
                SEED_SAMPLE[1].to_string(),
                SEED_SAMPLE[0].to_string(),
            ],
        ];
        for _ in 0..20 {
            texts.shuffle(&mut rng);
            let groups = group_texts(&texts, 0.8, Linkage::Single);
            assert_eq!(groups, expected);
            // Three documents kept: one per group, plus "x y z".
            let kept = texts.len() - groups.iter().map(|g| g.len() - 1).sum::<usize>();
            assert_eq!(kept, 3);
        }
    }

    #[test]
    fn the_seed_chain_collapses_only_under_single_linkage() {
        let letters: Vec<char> = "abcdefghijklmnop".chars().collect();
        let chain: Vec<String> = (0..16)
            .map(|i| {
                letters[i..]
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let chain: Vec<&str> = chain.iter().map(String::as_str).collect();
        let single = group_texts(&chain, 0.8, Linkage::Single);
        let biggest = single.iter().map(Vec::len).max().unwrap();
        assert!(biggest >= 12, "single linkage chains: {single:?}");
        // "a..p" and "m n o p" share 4 of 16 words, yet single linkage groups them.
        assert!(
            single
                .iter()
                .any(|g| g.contains(&chain[0].to_string()) && g.contains(&chain[12].to_string()))
        );

        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        for linkage in [Linkage::Complete, Linkage::Star] {
            let reference = group_texts(&chain, 0.8, linkage);
            assert!(reference.len() > 1, "{linkage:?}: {reference:?}");
            for group in &reference {
                for a in group {
                    for b in group {
                        let ok = match linkage {
                            Linkage::Complete => jaccard(a, b) >= 0.8,
                            _ => true,
                        };
                        assert!(ok, "{linkage:?}: {a} / {b}");
                    }
                }
            }
            let mut shuffled = chain.clone();
            for _ in 0..20 {
                shuffled.shuffle(&mut rng);
                assert_eq!(
                    group_texts(&shuffled, 0.8, linkage),
                    reference,
                    "{linkage:?}"
                );
            }
        }
    }

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

    /// A group past the sample size still keeps its most central member, by a sample of the
    /// others, and asks a number of similarities that grows with the group.
    #[test]
    fn a_large_group_keeps_its_centre_from_a_sample() {
        let n = 20 * SIMILARITY_SAMPLE;
        let ids: Vec<String> = (0..n).map(|i| format!("doc{i:06}")).collect();
        let pairs: Vec<(u32, u32)> = (1..n as u32).map(|y| (0, y)).collect();
        // Document 777 is the nearest to every other; the rest are alike.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let sim = |x: u32, y: u32| {
            asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if x == 777 || y == 777 { 0.95 } else { 0.8 }
        };
        let groups = connected_groups(&ids, &pairs, sim);
        assert_eq!(groups[0].members.len(), n);
        assert_eq!(groups[0].representative, 777);
        assert!((groups[0].representative_similarity - 0.95).abs() < 1e-12);
        let asked = asked.into_inner();
        assert!(asked <= n * (SIMILARITY_SAMPLE + 1), "{asked} similarities");
    }

    /// Past the budget, a group asks about as many similarities as the budget, however large.
    #[test]
    fn a_huge_group_asks_within_the_budget() {
        let n = 2 * SIMILARITY_BUDGET / SMALLEST_SAMPLE;
        let members: Vec<u32> = (0..n as u32).collect();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let centre = n as u32 / 2;
        let sim = |x: u32, y: u32| {
            asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if x == centre || y == centre {
                0.95
            } else {
                0.8
            }
        };
        let (representative, _) = choose_representative(&members, &sim);
        assert_eq!(representative, centre);
        let asked = asked.into_inner();
        assert!(asked <= n * (SMALLEST_SAMPLE + 1), "{asked} similarities");
        assert!(asked >= n * SMALLEST_SAMPLE / 2, "{asked} similarities");
    }

    #[test]
    fn groups_are_ordered_by_their_smallest_id() {
        let ids = ids(&["d", "c", "b", "a"]);
        let groups = connected_groups(&ids, &[(0, 1), (2, 3)], |_, _| 1.0);
        assert_eq!(groups[0].members, vec![3, 2]);
        assert_eq!(groups[1].members, vec![1, 0]);
    }
}
