//! How the cache holds keys: in blocks of [`KEY_BLOCK`] positions, each block dimension-major.
//!
//! The attention's score products take a register of consecutive keys' same dimension, so
//! that scores come out many keys to a register with no sums across lanes. With keys held
//! one after another, as the model writes them, every block had to be transposed before its
//! scores: a third of decode attention's instructions at a depth of 4k. Held transposed from
//! the start, a block is read as it lies, and the transposing happens once per key as it is
//! written, a few hundred stores per decoded token for all the layers.
//!
//! Key `pos`, dimension `d`, of KV head `head` is at
//! `(head · capacity + ⌊pos / KEY_BLOCK⌋ · KEY_BLOCK) · head_dim + d · KEY_BLOCK + pos % KEY_BLOCK`,
//! so that a head's first `n` blocks are its first `n · KEY_BLOCK · head_dim` elements, as
//! its first rows would be in the plain layout: copying a prefix of a cache is unchanged.
//! Values stay one row per position: their products read a row at a time.

use super::{KEY_BLOCK, KvElement, ShapeError};

/// The sizes of one layer's key cache: `kv_heads` heads of `capacity` positions, a multiple
/// of [`KEY_BLOCK`], of `head_dim` values each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheShape {
    pub kv_heads: usize,
    pub head_dim: usize,
    pub capacity: usize,
}

impl CacheShape {
    /// Elements in the cache, or an error if the shape cannot describe one.
    pub(super) fn elements(&self) -> Result<usize, ShapeError> {
        if !self.capacity.is_multiple_of(KEY_BLOCK) {
            return Err(ShapeError(format!(
                "a cache of {} positions is not whole blocks of {KEY_BLOCK}",
                self.capacity
            )));
        }
        self.kv_heads
            .checked_mul(self.capacity)
            .and_then(|n| n.checked_mul(self.head_dim))
            .ok_or_else(|| ShapeError(format!("the size of {self:?} overflows")))
    }

    /// Where dimension `d` of key `pos` of `head` is held.
    #[inline(always)]
    fn index(&self, head: usize, pos: usize, d: usize) -> usize {
        let block = pos - pos % KEY_BLOCK;
        (head * self.capacity + block) * self.head_dim + d * KEY_BLOCK + pos % KEY_BLOCK
    }
}

/// Writes `keys`, `(kv_heads, n, head_dim)` row-major, into `cache` at positions
/// `at..at + n`: what [`crate::causal_attention`] reads as the keys of those positions.
pub fn store_keys<E: Copy>(
    cache: &mut [E],
    shape: CacheShape,
    at: usize,
    keys: &[E],
) -> Result<(), ShapeError> {
    let elements = shape.elements()?;
    if cache.len() != elements {
        return Err(ShapeError(format!(
            "a key cache of {} values, {elements} expected for {shape:?}",
            cache.len()
        )));
    }
    let row = shape.kv_heads * shape.head_dim;
    if row == 0 || !keys.len().is_multiple_of(row) {
        return Err(ShapeError(format!(
            "{} keys are not rows of {} heads × {}",
            keys.len(),
            shape.kv_heads,
            shape.head_dim
        )));
    }
    let n = keys.len() / row;
    if at.checked_add(n).is_none_or(|end| end > shape.capacity) {
        return Err(ShapeError(format!(
            "{n} keys at position {at} exceed the cache's {} positions",
            shape.capacity
        )));
    }
    for head in 0..shape.kv_heads {
        for t in 0..n {
            let from = &keys[(head * n + t) * shape.head_dim..][..shape.head_dim];
            for (d, &x) in from.iter().enumerate() {
                cache[shape.index(head, at + t, d)] = x;
            }
        }
    }
    Ok(())
}

/// The first `count` keys of one block (`head_dim · KEY_BLOCK` elements as the cache holds
/// them) as rows of f32, one per key, in `rows`: for the portable kernel, which takes a
/// key at a time.
pub(super) fn block_rows<E: KvElement>(
    block: &[E],
    count: usize,
    head_dim: usize,
    rows: &mut Vec<f32>,
) {
    rows.clear();
    rows.extend(
        (0..count * head_dim).map(|i| block[(i % head_dim) * KEY_BLOCK + i / head_dim].widen()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_keys_land_where_the_layout_says_and_nothing_else_moves() {
        let shape = CacheShape {
            kv_heads: 2,
            head_dim: 3,
            capacity: 2 * KEY_BLOCK,
        };
        let mut cache = vec![-1i32; 2 * 2 * KEY_BLOCK * 3];
        // Three keys across a block boundary, for both heads.
        let at = KEY_BLOCK - 1;
        let keys: Vec<i32> = (0..2 * 3 * 3).collect();
        store_keys(&mut cache, shape, at, &keys).unwrap();
        let mut written = 0;
        for head in 0..2 {
            for t in 0..3 {
                for d in 0..3 {
                    let want = keys[(head * 3 + t) * 3 + d];
                    assert_eq!(cache[shape.index(head, at + t, d)], want);
                    written += 1;
                }
            }
        }
        assert_eq!(cache.iter().filter(|&&x| x != -1).count(), written);
        // Key `at` (the last of block 0) of head 1, dimension 2.
        let block_0_of_head_1 = 2 * KEY_BLOCK * 3;
        assert_eq!(cache[block_0_of_head_1 + 2 * KEY_BLOCK + KEY_BLOCK - 1], 11);
    }

    #[test]
    fn a_block_reads_back_as_the_rows_it_was_given() {
        let shape = CacheShape {
            kv_heads: 1,
            head_dim: 5,
            capacity: KEY_BLOCK,
        };
        let keys: Vec<f32> = (0..7 * 5).map(|i| i as f32).collect();
        let mut cache = vec![0f32; KEY_BLOCK * 5];
        store_keys(&mut cache, shape, 0, &keys).unwrap();
        let mut rows = Vec::new();
        block_rows(&cache, 7, 5, &mut rows);
        assert_eq!(rows, keys);
    }

    #[test]
    fn keys_that_do_not_fit_are_errors_and_write_nothing() {
        let shape = CacheShape {
            kv_heads: 2,
            head_dim: 4,
            capacity: KEY_BLOCK,
        };
        let mut cache = vec![0f32; 2 * KEY_BLOCK * 4];
        let two_rows = vec![1f32; 2 * 2 * 4];
        let past_the_end = store_keys(&mut cache, shape, KEY_BLOCK - 1, &two_rows);
        assert!(past_the_end.unwrap_err().to_string().contains("exceed"));
        assert!(store_keys(&mut cache, shape, usize::MAX, &two_rows).is_err());
        assert!(store_keys(&mut cache, shape, 0, &two_rows[1..]).is_err());
        assert!(store_keys(&mut cache[1..], shape, 0, &two_rows).is_err());
        let uneven = CacheShape {
            capacity: KEY_BLOCK + 1,
            ..shape
        };
        assert!(store_keys(&mut cache, uneven, 0, &two_rows).is_err());
        assert!(cache.iter().all(|&x| x == 0.0));
    }
}
