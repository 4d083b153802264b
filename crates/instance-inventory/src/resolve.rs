//! Name resolution behind a trait: [`SystemResolver`] asks the operating system's resolver (through tokio, so the
//! runtime never blocks), [`StaticResolver`] answers from a fixed table.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;

/// A DNS name could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct ResolveError {
    /// What the resolver said.
    pub detail: String,
}

/// Resolves DNS names to IP addresses.
pub trait Resolver: Sync {
    /// Every address `name` resolves to, in the resolver's order.
    fn resolve(&self, name: &str) -> impl Future<Output = Result<Vec<IpAddr>, ResolveError>> + Send;
}

/// The operating system's resolver (`/etc/hosts`, DNS), through `tokio::net::lookup_host`; needs a tokio runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    async fn resolve(&self, name: &str) -> Result<Vec<IpAddr>, ResolveError> {
        let addresses =
            tokio::net::lookup_host((name, 0)).await.map_err(|error| ResolveError { detail: error.to_string() })?;
        let mut ips: Vec<IpAddr> = Vec::new();
        for address in addresses {
            if !ips.contains(&address.ip()) {
                ips.push(address.ip());
            }
        }
        Ok(ips)
    }
}

/// A fixed table of names and their addresses, matched case-insensitively; any other name does not resolve.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use wmco_instance_inventory::{Resolver, StaticResolver};
///
/// let resolver = StaticResolver::new([("win1.example", vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))])]);
/// let ips = futures::executor::block_on(resolver.resolve("WIN1.example")).unwrap();
/// assert_eq!(ips, vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);
/// assert!(futures::executor::block_on(resolver.resolve("win2.example")).is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    addresses_by_name: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// A resolver answering exactly the given names.
    pub fn new<N: AsRef<str>>(entries: impl IntoIterator<Item = (N, Vec<IpAddr>)>) -> Self {
        let addresses_by_name =
            entries.into_iter().map(|(name, ips)| (name.as_ref().to_ascii_lowercase(), ips)).collect();
        Self { addresses_by_name }
    }
}

impl Resolver for StaticResolver {
    async fn resolve(&self, name: &str) -> Result<Vec<IpAddr>, ResolveError> {
        self.addresses_by_name
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| ResolveError { detail: "no such host".to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[tokio::test]
    async fn system_resolver_resolves_localhost_to_loopback() {
        let ips = SystemResolver.resolve("localhost").await.unwrap();
        assert!(ips.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{ips:?}");
    }
}
