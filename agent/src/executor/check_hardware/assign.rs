//! Matching each expected item (a disk, a NIC) to a distinct item of the machine: a maximum bipartite
//! matching, so that the order the profile lists them in does not matter (a profile asking for a disk
//! of 100 GiB or more and one of 1000 GiB or more is met by a node with disks of 1000 and 200 GiB,
//! which taking the first fit in order would miss).

/// For each of `wants` expected items, the index of the machine's item it is matched to, or `None`
/// when no distinct item is left for it. `fits(w, h)` says whether item `h` of the `haves` meets
/// expected item `w`. The matching is as large as can be, and deterministic: expected items are placed
/// in order, each taking the first free item that fits, or else one whose holder can move to another.
pub fn assign(
    wants: usize,
    haves: usize,
    fits: impl Fn(usize, usize) -> bool,
) -> Vec<Option<usize>> {
    let mut owner: Vec<Option<usize>> = vec![None; haves];
    for want in 0..wants {
        let mut seen = vec![false; haves];
        augment(want, &fits, &mut owner, &mut seen);
    }
    let mut matched = vec![None; wants];
    for (have, want) in owner.iter().enumerate() {
        if let Some(w) = want {
            matched[*w] = Some(have);
        }
    }
    matched
}

/// Kuhn's augmenting path from `want`: takes the first free item that fits; when none is free, the
/// first one whose holder can move to another. Recursion is at most `wants` deep (each level visits a
/// distinct item), and profiles list at most a few hundred items.
fn augment(
    want: usize,
    fits: &impl Fn(usize, usize) -> bool,
    owner: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    if let Some(free) = (0..owner.len()).find(|&h| owner[h].is_none() && fits(want, h)) {
        owner[free] = Some(want);
        return true;
    }
    for have in 0..owner.len() {
        if seen[have] || !fits(want, have) {
            continue;
        }
        seen[have] = true;
        if let Some(holder) = owner[have] {
            if augment(holder, fits, owner, seen) {
                owner[have] = Some(want);
                return true;
            }
        }
    }
    false
}
