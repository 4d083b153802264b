//! The SSH wire format (RFC 4251 §5) as far as public key blobs and `openssh-key-v1` headers need it.

/// Reads SSH wire values from a byte slice, front to back.
pub(crate) struct WireReader<'a> {
    rest: &'a [u8],
}

impl<'a> WireReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> WireReader<'a> {
        WireReader { rest: bytes }
    }

    /// A `uint32`.
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.rest.split_first_chunk::<4>()?;
        self.rest = rest;
        Some(u32::from_be_bytes(*head))
    }

    /// A `string` (also an `mpint`'s bytes).
    pub(crate) fn string(&mut self) -> Option<&'a [u8]> {
        let length = usize::try_from(self.u32()?).ok()?;
        if self.rest.len() < length {
            return None;
        }
        let (value, rest) = self.rest.split_at(length);
        self.rest = rest;
        Some(value)
    }

    /// True when every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Builds an SSH wire blob.
#[derive(Default)]
pub(crate) struct WireWriter {
    bytes: Vec<u8>,
}

impl WireWriter {
    /// Appends a `string`.
    pub(crate) fn string(mut self, value: &[u8]) -> WireWriter {
        let length = u32::try_from(value.len()).unwrap_or(u32::MAX);
        self.bytes.extend_from_slice(&length.to_be_bytes());
        self.bytes.extend_from_slice(value);
        self
    }

    /// Appends an `mpint` from an unsigned big-endian magnitude (leading zeros dropped, a zero byte added when the
    /// top bit is set, as RFC 4251 requires).
    pub(crate) fn mpint(self, magnitude: &[u8]) -> WireWriter {
        let trimmed = strip_leading_zeros(magnitude);
        if trimmed.first().is_some_and(|byte| byte & 0x80 != 0) {
            let mut padded = Vec::with_capacity(trimmed.len() + 1);
            padded.push(0);
            padded.extend_from_slice(trimmed);
            self.string(&padded)
        } else {
            self.string(trimmed)
        }
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// `bytes` without its leading zero bytes.
pub(crate) fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let first = bytes.iter().position(|byte| *byte != 0).unwrap_or(bytes.len());
    &bytes[first..]
}

/// The number of significant bits of an unsigned big-endian integer.
pub(crate) fn bit_length(magnitude: &[u8]) -> u32 {
    let trimmed = strip_leading_zeros(magnitude);
    match trimmed.first() {
        None => 0,
        Some(top) => {
            let whole_bytes = u32::try_from(trimmed.len() - 1).unwrap_or(u32::MAX / 8);
            whole_bytes * 8 + (8 - top.leading_zeros())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mpint_follows_rfc_4251_examples() {
        assert_eq!(WireWriter::default().mpint(&[0]).finish(), [0, 0, 0, 0]);
        assert_eq!(WireWriter::default().mpint(&[0x00, 0x80]).finish(), [0, 0, 0, 2, 0x00, 0x80]);
        assert_eq!(WireWriter::default().mpint(&[0x09, 0xa3]).finish(), [0, 0, 0, 2, 0x09, 0xa3]);
    }

    #[test]
    fn bit_length_ignores_leading_zeros() {
        assert_eq!(bit_length(&[]), 0);
        assert_eq!(bit_length(&[0, 0]), 0);
        assert_eq!(bit_length(&[0, 1]), 1);
        assert_eq!(bit_length(&[0x80, 0]), 16);
        assert_eq!(bit_length(&[0, 0x7f, 0xff]), 15);
    }

    #[test]
    fn reader_refuses_truncated_strings() {
        let mut reader = WireReader::new(&[0, 0, 0, 5, b'a']);
        assert_eq!(reader.string(), None);
    }

    proptest! {
        #[test]
        fn bit_length_matches_the_top_bit(top in 1u8..=255, rest in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut magnitude = vec![0, top];
            magnitude.extend(&rest);
            let expected = u32::try_from(rest.len()).unwrap() * 8 + 8 - top.leading_zeros();
            prop_assert_eq!(bit_length(&magnitude), expected);
        }

        #[test]
        fn strings_read_back(values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..6)) {
            let blob = values.iter().fold(WireWriter::default(), |writer, value| writer.string(value)).finish();
            let mut reader = WireReader::new(&blob);
            for value in &values {
                prop_assert_eq!(reader.string(), Some(value.as_slice()));
            }
            prop_assert!(reader.is_empty());
        }
    }
}
