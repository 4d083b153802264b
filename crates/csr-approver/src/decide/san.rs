//! Serving-request SANs as the rules see them: [`ServingSan`] (a SAN that passed D3), how a rule message names one,
//! and whether a list of Node or Machine addresses holds one. Shared by the extension rules (D4) and the state
//! rules (F3).

use std::net::IpAddr;

use crate::world::NodeAddress;

/// A SAN of a serving request that passed D3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ServingSan<'a> {
    /// A dNSName.
    Dns(&'a str),
    /// An iPAddress.
    Ip(IpAddr),
}

/// How rule messages name a SAN: `DNS:<name>` or `IP:<address>`.
pub(super) fn san_text(san: &ServingSan<'_>) -> String {
    match san {
        ServingSan::Dns(name) => format!("DNS:{name}"),
        ServingSan::Ip(ip) => format!("IP:{ip}"),
    }
}

/// Whether `addresses` lists the SAN: DNS SANs against name entries (compared as DNS names, [`same_dns_name`]), IP
/// SANs against IP entries.
pub(super) fn addresses_list(addresses: &[NodeAddress], san: &ServingSan<'_>) -> bool {
    addresses.iter().any(|entry| match san {
        ServingSan::Dns(name) => entry.address_type.holds_name() && same_dns_name(&entry.address, name),
        ServingSan::Ip(ip) => !entry.address_type.holds_name() && parse_ip(&entry.address) == Some(*ip),
    })
}

/// Whether two DNS names are the same name: DNS compares names without regard to ASCII case (RFC 4343). Windows
/// names its hosts in upper case (`WIN-3MQ5R0EXAMPLE`, `EC2AMAZ-EXAMPLE`) while the kubelet lower-cases its name and
/// its serving SANs, so the recorded hostname and FQDN never equal the SANs byte for byte.
pub(crate) fn same_dns_name(recorded: &str, requested: &str) -> bool {
    recorded.eq_ignore_ascii_case(requested)
}

/// An address entry as an IP, `None` when it is not one.
pub(super) fn parse_ip(text: &str) -> Option<IpAddr> {
    text.parse().ok()
}
