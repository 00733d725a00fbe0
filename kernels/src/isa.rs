//! The instruction sets the packed kernels come in, and which of them this CPU runs.
//!
//! Every format keeps one tile layout for both: a 64-byte word holds the same four columns of
//! a tile's sixteen rows, which one 512-bit register takes whole and two 256-bit ones take as
//! rows 0–7 and 8–15. So the choice is made per matrix at pack time and only picks the kernel
//! (Q8_0 also stores its bytes differently, see `PackedQ8_0`, and Q5_0 and Q5_1 split their
//! 5-bit values differently, see `five_bit_layout`).

/// The instruction set a packed matrix runs on, chosen once at pack time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// `vpdpbusd` on 512-bit registers: 16 rows × 4 columns per instruction, summed in i32.
    Avx512Vnni,
    /// `vpdpbusd` on 256-bit registers (AVX-VNNI, VEX-encoded), with AVX2 around it: Intel's
    /// desktop and laptop CPUs since Alder Lake, which have no AVX-512. Each of its rows ×
    /// words is the one instruction where AVX2 takes two or three; the formats without a
    /// kernel of their own here run their AVX2 one, on its layout.
    AvxVnni,
    /// `vpmaddubsw` + `vpmaddwd` on 256-bit registers, for CPUs without AVX-512 VNNI.
    Avx2,
}

impl Isa {
    /// Every kernel, fastest first.
    pub const ALL: [Self; 3] = [Self::Avx512Vnni, Self::AvxVnni, Self::Avx2];

    /// The fastest kernel this CPU runs, if any.
    pub fn detect() -> Option<Self> {
        Self::ALL.into_iter().find(|isa| isa.available())
    }

    /// Whether this CPU runs `self`.
    pub fn available(self) -> bool {
        match self {
            Self::Avx512Vnni => avx512_vnni_available(),
            Self::AvxVnni => avx2_available() && avx_vnni_available(),
            Self::Avx2 => avx2_available(),
        }
    }
}

/// AVX-512 F/BW and VNNI: the 512-bit kernels also use FMA and 256-bit loads, which every
/// AVX-512 CPU has.
#[cfg(target_arch = "x86_64")]
fn avx512_vnni_available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

#[cfg(not(target_arch = "x86_64"))]
fn avx512_vnni_available() -> bool {
    false
}

/// The 256-bit `vpdpbusd`, which the AVX-VNNI kernels add to AVX2's.
#[cfg(target_arch = "x86_64")]
fn avx_vnni_available() -> bool {
    is_x86_feature_detected!("avxvnni")
}

#[cfg(not(target_arch = "x86_64"))]
fn avx_vnni_available() -> bool {
    false
}

/// AVX2, FMA and F16C, which the AVX2 kernels need: F16C widens the f16 scales that tiles keep
/// as the file stores them (every CPU with AVX2 has it, as does every AVX-512 one).
#[cfg(target_arch = "x86_64")]
fn avx2_available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

#[cfg(not(target_arch = "x86_64"))]
fn avx2_available() -> bool {
    false
}

/// Every kernel this CPU runs, for tests that hold each to its reference.
#[cfg(test)]
pub(crate) fn kernels_here() -> Vec<Isa> {
    let here: Vec<Isa> = Isa::ALL.into_iter().filter(|isa| isa.available()).collect();
    if here.is_empty() {
        eprintln!("this CPU runs no packed kernel: only the reference is tested");
    }
    here
}
