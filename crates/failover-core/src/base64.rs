//! Base64 decoding (RFC 4648 section 4, the standard alphabet with `=`
//! padding), for HTTP Basic credentials: the one place the Worker reads
//! base64, too small to justify a dependency in the Wasm.
//!
//! Strict, because the input is whatever a client sends: the length must be
//! a multiple of four, `=` may only close the last group (one or two of
//! them), the bits padding leaves over must be zero (so every byte string
//! has exactly one accepted encoding), and nothing else, whitespace
//! included, is accepted. A browser's and curl's encodings are all of that.

/// The bytes `text` encodes, or `None` when it is not strict base64.
/// Allocates only after the length has been checked, at most 3/4 of it.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.chunks_exact(4);
    let last = groups.len().checked_sub(1);
    for (g, group) in groups.enumerate() {
        let pad = group.iter().rev().take_while(|&&b| b == b'=').count();
        // Padding closes the last group only, and fills at most two places.
        if pad > 2 || (pad > 0 && Some(g) != last) {
            return None;
        }
        let mut sextets = [0u8; 4];
        for (slot, &b) in sextets.iter_mut().zip(&group[..4 - pad]) {
            *slot = value(b)?;
        }
        let n = sextets
            .iter()
            .fold(0u32, |acc, &s| (acc << 6) | u32::from(s));
        let [_, b0, b1, b2] = n.to_be_bytes();
        match pad {
            0 => out.extend_from_slice(&[b0, b1, b2]),
            // The bits past the last whole byte must be zero.
            1 if b2 == 0 => out.extend_from_slice(&[b0, b1]),
            2 if b1 == 0 && b2 == 0 => out.push(b0),
            _ => return None,
        }
    }
    Some(out)
}

/// One character's six bits; `None` outside the standard alphabet (`=`
/// included: padding is counted before this is asked).
fn value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference encoder the decoder is held to (tests only: nothing
    /// in the product encodes).
    pub(crate) fn encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .chain(std::iter::repeat(&0))
                .take(3)
                .fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn rfc_4648_test_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(
                decode(encoded).as_deref(),
                Some(plain.as_bytes()),
                "{encoded}"
            );
            assert_eq!(encode(plain.as_bytes()), encoded);
        }
        // What a browser sends for user "ops", password "s3cret".
        assert_eq!(
            decode("b3BzOnMzY3JldA==").as_deref(),
            Some(&b"ops:s3cret"[..])
        );
        assert_eq!(decode("+/+/").as_deref(), Some(&[0xfb, 0xff, 0xbf][..]));
    }

    #[test]
    fn anything_not_strict_base64_is_refused() {
        for bad in [
            "Zg",         // unpadded
            "Zg=",        // short padding
            "Zm9",        // not a multiple of four
            "Z===",       // three pads
            "====",       // nothing but padding
            "Zg==Zg==",   // padding before the end
            "Zm=v",       // a pad inside a group
            "Z=g=",       // ditto
            "Zh==",       // non-zero leftover bits ('h' = 33)
            "Zm9=",       // ditto ('9' = 61)
            "Zm9v YmFy",  // whitespace
            "Zm9v\nYmFy", // a line break
            "Zm9-",       // the URL-safe alphabet
            "Zm9_",
            "Zm9vYmFy\0\0\0\0",
            "Zm9vé===", // non-ASCII
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    proptest! {
        /// Every byte string decodes back from its encoding.
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(decode(&encode(&bytes)), Some(bytes));
        }

        /// Whatever the text, decoding answers without panicking, and what
        /// it accepts is the one canonical encoding of what it returns.
        #[test]
        fn accepted_text_is_canonical(text in "[A-Za-z0-9+/=\\- ]{0,24}") {
            if let Some(bytes) = decode(&text) {
                prop_assert_eq!(encode(&bytes), text);
            }
        }
    }
}
