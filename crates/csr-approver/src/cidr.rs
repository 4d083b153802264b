//! [`IpCidr`]: an IPv4 or IPv6 network in CIDR notation (`10.128.0.0/14`), for the service and cluster networks.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why a CIDR string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a CIDR like 10.128.0.0/14 or fd00::/48")]
pub struct CidrError {
    /// The text given.
    pub text: String,
}

/// A network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IpCidr {
    network: IpAddr,
    prefix_len: u8,
}

impl IpCidr {
    /// Whether `address` lies in this network (an IPv4 network never contains an IPv6 address and vice versa).
    ///
    /// ```
    /// use wmco_csr_approver::IpCidr;
    /// let cidr: IpCidr = "172.30.0.0/16".parse()?;
    /// assert!(cidr.contains("172.30.4.1".parse()?));
    /// assert!(!cidr.contains("172.31.0.1".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_len)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_len)
            }
            _ => false,
        }
    }
}

fn prefix_matches(network: &[u8], address: &[u8], prefix_len: u8) -> bool {
    let full_bytes = usize::from(prefix_len / 8);
    let remaining_bits = prefix_len % 8;
    if network[..full_bytes] != address[..full_bytes] {
        return false;
    }
    if remaining_bits == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - remaining_bits);
    network[full_bytes] & mask == address[full_bytes] & mask
}

impl FromStr for IpCidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || CidrError { text: text.to_owned() };
        let (address, prefix) = text.split_once('/').ok_or_else(error)?;
        let network: IpAddr = address.parse().map_err(|_| error())?;
        let prefix_len: u8 = prefix.parse().map_err(|_| error())?;
        let max_len = if network.is_ipv4() { 32 } else { 128 };
        if prefix_len > max_len {
            return Err(error());
        }
        Ok(Self { network, prefix_len })
    }
}

impl TryFrom<String> for IpCidr {
    type Error = CidrError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<IpCidr> for String {
    fn from(cidr: IpCidr) -> Self {
        cidr.to_string()
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> IpCidr {
        text.parse().unwrap()
    }

    #[test]
    fn v4_prefixes() {
        assert!(cidr("10.128.0.0/14").contains("10.131.255.255".parse().unwrap()));
        assert!(!cidr("10.128.0.0/14").contains("10.132.0.0".parse().unwrap()));
        assert!(cidr("0.0.0.0/0").contains("203.0.113.9".parse().unwrap()));
        assert!(cidr("203.0.113.9/32").contains("203.0.113.9".parse().unwrap()));
        assert!(!cidr("203.0.113.9/32").contains("203.0.113.8".parse().unwrap()));
    }

    #[test]
    fn v6_prefixes_and_family_mismatch() {
        assert!(cidr("fd00:10::/48").contains("fd00:10::1".parse().unwrap()));
        assert!(!cidr("fd00:10::/48").contains("fd00:11::1".parse().unwrap()));
        assert!(!cidr("0.0.0.0/0").contains("::1".parse().unwrap()));
    }

    #[test]
    fn parse_errors_and_round_trip() {
        for bad in ["10.0.0.0", "10.0.0.0/33", "::/129", "x/8", "10.0.0.0/-1"] {
            assert_eq!(bad.parse::<IpCidr>(), Err(CidrError { text: bad.into() }));
        }
        assert_eq!(cidr("172.30.0.0/16").to_string(), "172.30.0.0/16");
    }
}
