//! Compute kernels for the local engine, each a SIMD path with a scalar reference that the
//! tests hold it to.
//!
//! - [`PackedQ8_0`]: Q8_0 weights repacked for int8 dot-product instructions, multiplied by a
//!   batch of f32 activation rows. It is what makes prefill fast where candle's own repacked
//!   path does not apply (rows whose length is not a multiple of 256, such as the 896-wide
//!   projections of Qwen2.5-0.5B).
//! - [`PackedQ4_0`]: Q4_0 weights, kept 4-bit, the nibbles multiplied as unsigned bytes.
//! - [`PackedQ4_1`]: Q4_1 weights, kept 4-bit with their f16 scales and offsets.
//! - [`PackedQ5_0`] and [`PackedQ5_1`]: Q5_0 and Q5_1 weights, kept 5-bit (nibbles and fifth
//!   bits packed), the fifth bits shifted into place.
//! - [`PackedQ4_K`], [`PackedQ5_K`] and [`PackedQ6_K`]: the K-quants of Q4_K_M and Q5_K_M
//!   files, kept at their file size (nibbles, fifth bits and 2-bit high parts packed,
//!   sub-block scales as small integers).
//! - [`PackedQ2_K`] and [`PackedQ3_K`]: the low-bit K-quants of Q2_K and Q3_K_M files, kept
//!   at their file size (2-bit planes, Q3_K's high bits beside them).
//!
//! Each format has an AVX-512 VNNI kernel (`vpdpbusd`, sixteen rows per register, sums in
//! i32) and an AVX2 one (`vpmaddubsw` and `vpmaddwd`, eight rows per register); Q8_0, Q4_0,
//! Q4_1, Q5_0, Q5_1, Q4_K and Q5_K also have an AVX-VNNI one (the 256-bit `vpdpbusd` of Intel's
//! desktop and laptop CPUs since Alder Lake, the AVX2 kernel's body with its byte products in
//! one instruction: `byte_products`), and the others run their AVX2 kernel there; [`Isa`]
//! picks the fastest the CPU runs when a matrix is packed. Tiles keep the file's f16 scales
//! as they are, widened a tile at a time in the kernel: decode reads every weight once per
//! token, so a byte stored wider is a byte more read.
//! - [`WeightRequests`]: how the decode kernels ask for the weights ahead of use, chosen per
//!   CPU maker (non-temporal on AMD's, into L2 on Intel's, where the other halved the rate).
//! - [`WeightArena`]: the memory packed matrices live in, runs of it shared by a model's
//!   matrices and advised for 2 MiB pages, which decoding reads 6–9% faster than 4 KiB ones.
//! - [`causal_attention`]: attention over a preallocated KV cache (f32 or f16) read in place,
//!   with an online softmax instead of a materialized score matrix and mask, and the key range
//!   split between threads when there are fewer KV heads than threads (decoding).
//! - [`measure_bandwidth`] and [`BandwidthProbe`]: the memory's read bandwidth, the roof decode
//!   works under (each token reads every weight once).
//! - [`rms_norm`] and [`add_rms_norm`]: RMS normalization of activation rows (after adding a
//!   residual branch), eight rows' sums in flight at once, to the bit what candle's op gives.
//! - [`rotate_heads`]: rotary position embedding of the query or key heads, read from the
//!   q/k/v projection's rows and written head-major in one pass, to the bit what candle's
//!   `rope` and `rope_i` give.
//! - [`silu_mul`]: the MLP's gated activation in one pass over the gate/up output, rows split
//!   between threads, to the bit what candle's ops give.
//! - [`keep_pool_warm`]: the pool's threads spin instead of sleeping through a decoded token's
//!   forward pass, so each of its hundred matmul splits starts at once.

#![deny(unsafe_op_in_unsafe_fn)]

mod activations;
mod attention;
mod avx2_frame;
mod avx512_frame;
mod bandwidth;
mod byte_products;
#[cfg(target_arch = "x86_64")]
mod expf;
mod fifth_bits;
mod five_bit_layout;
#[cfg(test)]
mod format_checks;
mod isa;
mod packed;
mod prefetch;
mod q2_k;
mod q3_k;
mod q4_0;
mod q4_1;
mod q4_k;
mod q5_0;
mod q5_1;
mod q5_k;
mod q6_k;
mod q8_0;
mod rms_norm;
mod rope;
#[cfg(target_arch = "x86_64")]
mod scale_min512;
mod shares;
mod swiglu;
#[cfg(test)]
mod test_support;
mod tiled;
mod two_bits;
mod uninit;
mod warm_pool;
mod weight_arena;
#[cfg(target_arch = "x86_64")]
mod widened;

pub use attention::{
    AttentionShape, CacheShape, KEY_BLOCK, KvElement, ShapeError, causal_attention, store_keys,
};
pub use bandwidth::{BandwidthProbe, measure_bandwidth};
pub use isa::Isa;
pub use packed::{MatmulOut, PackedMatrix};
pub use prefetch::WeightRequests;
pub use q2_k::PackedQ2_K;
pub use q3_k::PackedQ3_K;
pub use q4_0::PackedQ4_0;
pub use q4_1::PackedQ4_1;
pub use q4_k::PackedQ4_K;
pub use q5_0::PackedQ5_0;
pub use q5_1::PackedQ5_1;
pub use q5_k::PackedQ5_K;
pub use q6_k::PackedQ6_K;
pub use q8_0::PackedQ8_0;
pub use rms_norm::{add_rms_norm, add_rms_norm_uninit, rms_norm, rms_norm_uninit};
pub use rope::{HeadRows, RopePairs, rotate_heads};
pub use swiglu::{silu_mul, silu_mul_uninit};
pub use tiled::{PackError, fits_tiles};
pub use warm_pool::keep_pool_warm;
pub use weight_arena::WeightArena;

/// An output buffer's start, shared by the threads of one parallel kernel call. Each thread
/// writes only its own elements, and the call joins them all before it returns.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: every user splits the output into disjoint parts per thread and joins the threads
// before the buffer's borrow ends (see `tiled::matmul` and `causal_attention`).
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`; the closures that share it only read the pointer itself.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The pointer `n` elements further. A method, so that closures capture the whole
    /// (`Sync`) wrapper rather than its raw pointer field.
    ///
    /// # Safety
    /// As for `pointer::add`: the result stays inside the buffer.
    unsafe fn add(self, n: usize) -> *mut f32 {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.add(n) }
    }
}
