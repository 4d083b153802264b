//! [`IpCidr`]: an IPv4 or IPv6 network in CIDR notation (`10.128.0.0/14`, `fd00::/48`), for the service, cluster
//! and node networks. Parsing takes an address, `/` and a decimal prefix length; the address is kept as written
//! (host bits allowed, as an HNS subnet may be written). Windows nodes are IPv4 only: [`IpCidr::parse_ipv4`]
//! refuses IPv6 networks with the renderer's message.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why a text is not a usable CIDR.
///
/// ```
/// use wmco_vocabulary::{CidrError, IpCidr};
///
/// assert_eq!("10.0.0.0".parse::<IpCidr>(), Err(CidrError::Syntax { text: "10.0.0.0".into() }));
/// assert_eq!(IpCidr::parse_ipv4("fd00::/48"), Err(CidrError::NotIpv4 { text: "fd00::/48".into() }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// Not an address, `/` and a prefix length the address family allows.
    #[error("{text:?} is not a CIDR like 10.128.0.0/14 or fd00::/48")]
    Syntax {
        /// The text given.
        text: String,
    },
    /// Not an IPv4 network in CIDR notation, where only IPv4 will do.
    #[error("{text:?} is not an IPv4 network in CIDR notation (e.g. 172.30.0.0/16)")]
    NotIpv4 {
        /// The text given.
        text: String,
    },
}

/// A network: an address (as written) and a prefix length. Serialized as its CIDR text.
///
/// ```
/// use wmco_vocabulary::IpCidr;
///
/// let services: IpCidr = "172.30.0.0/16".parse()?;
/// assert!(services.contains("172.30.4.1".parse()?));
/// assert_eq!(services.to_string(), "172.30.0.0/16");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IpCidr {
    address: IpAddr,
    prefix_length: u8,
}

impl IpCidr {
    /// `text` as an IPv4 network; any other text, IPv6 networks included, is [`CidrError::NotIpv4`].
    ///
    /// ```
    /// use wmco_vocabulary::IpCidr;
    /// assert!(IpCidr::parse_ipv4("10.128.2.0/24").is_ok());
    /// assert!(IpCidr::parse_ipv4("10.0.0.0/+8").is_err());
    /// ```
    ///
    /// # Errors
    /// [`CidrError::NotIpv4`] when `text` is not an IPv4 CIDR.
    pub fn parse_ipv4(text: &str) -> Result<Self, CidrError> {
        match text.parse::<IpCidr>() {
            Ok(cidr) if cidr.is_ipv4() => Ok(cidr),
            _ => Err(CidrError::NotIpv4 { text: text.to_owned() }),
        }
    }

    /// The network address as written.
    ///
    /// ```
    /// let cidr: wmco_vocabulary::IpCidr = "10.128.2.7/24".parse().unwrap();
    /// assert_eq!(cidr.address().to_string(), "10.128.2.7");
    /// ```
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// Whether this is an IPv4 network.
    ///
    /// ```
    /// use wmco_vocabulary::IpCidr;
    /// assert!("172.30.0.0/16".parse::<IpCidr>().unwrap().is_ipv4());
    /// assert!(!"fd02::/112".parse::<IpCidr>().unwrap().is_ipv4());
    /// ```
    pub fn is_ipv4(&self) -> bool {
        self.address.is_ipv4()
    }

    /// The prefix length (0–32 for IPv4, 0–128 for IPv6).
    ///
    /// ```
    /// let cidr: wmco_vocabulary::IpCidr = "fd00::/48".parse().unwrap();
    /// assert_eq!(cidr.prefix_length(), 48);
    /// ```
    pub fn prefix_length(&self) -> u8 {
        self.prefix_length
    }

    /// Whether `address` lies in this network (an IPv4 network never contains an IPv6 address and vice versa).
    ///
    /// ```
    /// use wmco_vocabulary::IpCidr;
    /// let cidr: IpCidr = "172.30.0.0/16".parse()?;
    /// assert!(cidr.contains("172.30.4.1".parse()?));
    /// assert!(!cidr.contains("172.31.0.1".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.address, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_length)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_length)
            }
            _ => false,
        }
    }

    /// The `n`th address of an IPv4 network (the network address is the 0th), if the network holds it; `None` for
    /// an IPv6 network. The cluster DNS service is conventionally `nth_address(10)` of the service network.
    ///
    /// ```
    /// use wmco_vocabulary::IpCidr;
    /// let services: IpCidr = "172.30.0.0/16".parse().unwrap();
    /// assert_eq!(services.nth_address(10), Some("172.30.0.10".parse().unwrap()));
    /// ```
    pub fn nth_address(&self, n: u32) -> Option<Ipv4Addr> {
        let IpAddr::V4(address) = self.address else { return None };
        let host_bits = 32 - u32::from(self.prefix_length);
        let size = 1_u64 << host_bits;
        if u64::from(n) >= size {
            return None;
        }
        let mask = if host_bits == 32 { 0 } else { u32::MAX << host_bits };
        Some(Ipv4Addr::from((u32::from(address) & mask) + n))
    }
}

fn prefix_matches(network: &[u8], address: &[u8], prefix_length: u8) -> bool {
    let full_bytes = usize::from(prefix_length / 8);
    let remaining_bits = prefix_length % 8;
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
        let error = || CidrError::Syntax { text: text.to_owned() };
        let (address, prefix) = text.split_once('/').ok_or_else(error)?;
        let address: IpAddr = address.parse().map_err(|_| error())?;
        if prefix.is_empty() || !prefix.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(error());
        }
        let prefix_length: u8 = prefix.parse().map_err(|_| error())?;
        let max_length = if address.is_ipv4() { 32 } else { 128 };
        if prefix_length > max_length {
            return Err(error());
        }
        Ok(Self { address, prefix_length })
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
        write!(f, "{}/{}", self.address, self.prefix_length)
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
        assert_eq!(cidr("fd00:10::/48").nth_address(1), None);
    }

    #[test]
    fn parse_errors_and_round_trip() {
        for bad in ["10.0.0.0", "10.0.0.0/33", "::/129", "x/8", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/"] {
            assert_eq!(bad.parse::<IpCidr>(), Err(CidrError::Syntax { text: bad.into() }));
        }
        assert_eq!(cidr("172.30.0.0/16").to_string(), "172.30.0.0/16");
        assert_eq!(serde_json::from_str::<IpCidr>("\"fd00::/48\"").unwrap(), cidr("fd00::/48"));
    }

    #[test]
    fn nth_addresses_of_ipv4_networks() {
        let network = cidr("10.128.2.0/24");
        assert_eq!(network.nth_address(255), Some(Ipv4Addr::new(10, 128, 2, 255)));
        assert_eq!(network.nth_address(256), None);
        assert_eq!(cidr("10.128.2.7/24").nth_address(1), Some(Ipv4Addr::new(10, 128, 2, 1)));
        assert_eq!(cidr("0.0.0.0/0").nth_address(10), Some(Ipv4Addr::new(0, 0, 0, 10)));
    }
}
