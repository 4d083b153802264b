//! `ByteSize`: a size written in the manifest as `120MiB`, `4KiB` or a plain number of bytes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number of bytes, written with an optional binary unit (`KiB`, `MiB`, `GiB`).
///
/// ```
/// use wmco_payload_manifest::ByteSize;
///
/// assert_eq!("120MiB".parse::<ByteSize>().unwrap().bytes(), 120 * 1024 * 1024);
/// assert_eq!(ByteSize::from_bytes(4096).to_string(), "4KiB");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(u64);

/// The text is not a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a size (expected a whole number followed by nothing, KiB, MiB or GiB)")]
pub struct ByteSizeError {
    /// The rejected text.
    pub text: String,
}

const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];

impl ByteSize {
    /// A size of `bytes` bytes.
    pub const fn from_bytes(bytes: u64) -> Self {
        Self(bytes)
    }

    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = ByteSizeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ByteSizeError { text: text.to_owned() };
        let (number, multiplier) = UNITS
            .iter()
            .find_map(|(unit, multiplier)| text.strip_suffix(unit).map(|number| (number, *multiplier)))
            .unwrap_or((text, 1));
        if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(error());
        }
        let count: u64 = number.parse().map_err(|_| error())?;
        count.checked_mul(multiplier).map(Self).ok_or_else(error)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match UNITS.iter().find(|(_, multiplier)| self.0 != 0 && self.0.is_multiple_of(*multiplier)) {
            Some((unit, multiplier)) => write!(f, "{}{unit}", self.0 / multiplier),
            None => write!(f, "{}", self.0),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Bytes(u64),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Bytes(bytes) => Ok(Self(bytes)),
            Written::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_plain_bytes() {
        assert_eq!("3KiB".parse(), Ok(ByteSize(3072)));
        assert_eq!("2GiB".parse(), Ok(ByteSize(2 << 30)));
        assert_eq!("900".parse(), Ok(ByteSize(900)));
    }

    #[test]
    fn rejects_fractions_signs_unknown_units_and_overflow() {
        for text in ["1.5MiB", "-1", "5MB", "MiB", "", "99999999999999GiB"] {
            assert_eq!(text.parse::<ByteSize>(), Err(ByteSizeError { text: text.to_owned() }));
        }
    }

    #[test]
    fn displays_in_the_largest_exact_unit() {
        assert_eq!(ByteSize(120 << 20).to_string(), "120MiB");
        assert_eq!(ByteSize(1536).to_string(), "1536");
        assert_eq!(ByteSize(0).to_string(), "0");
    }

    #[test]
    fn deserializes_numbers_and_strings() {
        assert_eq!(serde_json::from_str::<ByteSize>("17").unwrap(), ByteSize(17));
        assert_eq!(serde_json::from_str::<ByteSize>("\"1KiB\"").unwrap(), ByteSize(1024));
    }
}
