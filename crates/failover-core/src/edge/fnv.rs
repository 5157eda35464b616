//! The non-cryptographic hashes the edge uses: FNV-1a with MurmurHash3's
//! finaliser, in 32 bits for the rendezvous hash (which src/js/steer.mjs
//! reproduces bit for bit, with `Math.imul`) and in 64 bits for affinity
//! tokens and colo cache keys. None of them protects a secret: they only
//! make names opaque and spread keys.

/// FNV-1a-32's offset basis: the state before any byte.
pub const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;
/// FNV-1a-64's offset basis.
pub const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a-32 of `bytes`, continuing from the state `h`.
pub fn fnv1a32(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(FNV32_PRIME);
    }
    h
}

/// MurmurHash3's 32-bit finaliser: FNV-1a alone mixes its last bytes only
/// upwards, and hashes of similar inputs must look independent.
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// FNV-1a-64 of `bytes`, continuing from the state `h`.
pub fn fnv1a64(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV64_PRIME);
    }
    h
}

/// MurmurHash3's 64-bit finaliser.
pub fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // FNV-1a of "" is the offset basis; of "a", the published vectors.
        assert_eq!(fnv1a32(FNV32_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(FNV32_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a64(FNV64_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fmix32(0), 0);
        assert_eq!(fmix64(0), 0);
    }
}
