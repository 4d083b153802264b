//! The host's identity as every probing pass reads it again ([`ProbeRequest::identity`](crate::ProbeRequest)): its
//! host name, DNS name and the IPv4 address of the interface of its first default route, with the same statements
//! as the first contact's identity command (windows-commands.md §4.1), so a host whose DHCP address or name changed
//! since it was recorded is noticed on the next pass, in the round trip the pass makes anyway.

use serde::Deserialize;
use serde_json::Value;

/// The statements that set `$ih`, `$if` and `$ia`.
pub(crate) fn statements() -> [&'static str; 4] {
    [
        "$ih = [System.Net.Dns]::GetHostName()",
        "$if = [System.Net.Dns]::GetHostEntry($ih).HostName",
        "$ir = Get-NetRoute -DestinationPrefix '0.0.0.0/0' | Select-Object -First 1",
        "$ia = Get-NetIPAddress -InterfaceIndex $ir.InterfaceIndex -AddressFamily IPv4 | Select-Object -First 1",
    ]
}

/// The probe document's entry for the identity, after the others.
pub(crate) const ENTRY: &str = "; identity = [ordered]@{ hostname = $ih; fqdn = $if; ip = $ia.IPAddress }";

/// The host's identity as a probe read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ObservedIdentity {
    /// The host name as Windows reports it.
    pub hostname: String,
    /// The host's DNS name (`None`: none reported).
    #[serde(default)]
    pub fqdn: Option<String>,
    /// The IPv4 address of the default route's interface, as printed (`None`: no default route).
    #[serde(default)]
    pub ip: Option<String>,
}

/// The identity section of a probe document, or `None` when it is missing or not of the expected shape (a host that
/// cannot tell is treated as unchanged: the recorded identity stays).
pub(crate) fn parse(section: Value) -> Option<ObservedIdentity> {
    serde_json::from_value::<ObservedIdentity>(section).ok().filter(|identity| !identity.hostname.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reads_the_identity_only_when_asked() {
        let plain = crate::ProbeRequest::default();
        assert!(!plain.script().text().contains("GetHostName"));
        let asked = crate::ProbeRequest { identity: true, ..crate::ProbeRequest::default() };
        let script = asked.script();
        let text = script.text();
        assert!(statements().iter().all(|statement| text.contains(statement)) && text.contains(ENTRY), "{text}");
        let document = r#"{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[],
            "identity":{"hostname":"WIN-A","fqdn":"WIN-A.corp.example","ip":"10.0.0.42"},"shell":null}"#;
        let observed = asked.parse_output(&document.replace('\n', "")).unwrap();
        assert_eq!(observed.identity.unwrap().ip.as_deref(), Some("10.0.0.42"));
        assert_eq!(plain.parse_output(&document.replace('\n', "")).unwrap().identity, None);
    }

    #[test]
    fn a_section_with_a_name_is_read_and_anything_else_is_none() {
        let read = parse(serde_json::json!({"hostname": "WIN-A", "fqdn": "WIN-A.corp.example", "ip": "10.0.0.7"}));
        assert_eq!(read.unwrap().ip.as_deref(), Some("10.0.0.7"));
        let routeless = parse(serde_json::json!({"hostname": "WIN-A", "fqdn": null, "ip": null})).unwrap();
        assert_eq!((routeless.fqdn, routeless.ip), (None, None));
        assert_eq!(parse(Value::Null), None);
        assert_eq!(parse(serde_json::json!({"hostname": ""})), None);
    }
}
