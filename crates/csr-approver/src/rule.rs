//! The rule identifiers of the strict approver (csr-rules.md, rules A1–F4); a verdict names the rule that decided.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One rule of the approver. `Display` prints the ID (`E3`), and serde uses the same spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RuleId {
    /// The CSR is still undecided and carries no certificate.
    A1,
    /// The signer is one of the two kubelet signers.
    A2,
    /// The request decodes far enough to read a subject.
    A3,
    /// A subject CN starts with `system:node:`.
    A4,
    /// The CN's node name equals the expected node name of exactly one managed instance.
    A5,
    /// The count of recent undecided kubelet CSRs is within the global limit.
    A6,
    /// One strict PEM block holding strict PKCS#10 DER.
    B1,
    /// An allowed signature algorithm, and the signature verifies.
    B2,
    /// An allowed key type and size.
    B3,
    /// Exactly one CN and one O, single-valued RDNs, Printable or UTF8 strings.
    C1,
    /// O is `system:nodes`.
    C2,
    /// CN is `system:node:` plus a lowercase RFC 1123 subdomain.
    C3,
    /// Only a subjectAltName extension, and only on serving requests.
    D1,
    /// Client requests carry no SAN.
    D2,
    /// Serving SANs are 1–10 well-formed DNS names and routable IP addresses.
    D3,
    /// Serving SANs are all in the operator's record of the instance.
    D4,
    /// Usages are exactly one of the allowed sets.
    E1,
    /// `expirationSeconds` is absent or within 600…31 536 000.
    E2,
    /// The requester (username, groups, extra) is bound to the request.
    E3,
    /// Bootstrap: no Node yet, and the request falls in the instance's configuration window.
    F1,
    /// Bootstrap: at most one approved key per instance and configuration attempt.
    F2,
    /// Renewal and serving: the Node exists, is Windows, is linked to the instance and lists the SANs.
    F3,
    /// The CSR is at most 60 minutes old.
    F4,
}

impl RuleId {
    /// Every rule, in evaluation order.
    pub const ALL: [RuleId; 23] = [
        Self::A1,
        Self::A2,
        Self::A3,
        Self::A4,
        Self::A5,
        Self::A6,
        Self::B1,
        Self::B2,
        Self::B3,
        Self::C1,
        Self::C2,
        Self::C3,
        Self::D1,
        Self::D2,
        Self::D3,
        Self::D4,
        Self::E1,
        Self::E2,
        Self::E3,
        Self::F1,
        Self::F2,
        Self::F3,
        Self::F4,
    ];

    /// The rule's ID as text, such as `"E3"`.
    ///
    /// ```
    /// use wmco_csr_approver::RuleId;
    /// assert_eq!(RuleId::E3.as_str(), "E3");
    /// assert_eq!(RuleId::E3.to_string(), "E3");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::A1 => "A1",
            Self::A2 => "A2",
            Self::A3 => "A3",
            Self::A4 => "A4",
            Self::A5 => "A5",
            Self::A6 => "A6",
            Self::B1 => "B1",
            Self::B2 => "B2",
            Self::B3 => "B3",
            Self::C1 => "C1",
            Self::C2 => "C2",
            Self::C3 => "C3",
            Self::D1 => "D1",
            Self::D2 => "D2",
            Self::D3 => "D3",
            Self::D4 => "D4",
            Self::E1 => "E1",
            Self::E2 => "E2",
            Self::E3 => "E3",
            Self::F1 => "F1",
            Self::F2 => "F2",
            Self::F3 => "F3",
            Self::F4 => "F4",
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_serde_use_the_id() {
        for rule in RuleId::ALL {
            let json = format!("\"{rule}\"");
            assert_eq!(serde_json::to_string(&rule).unwrap(), json);
            assert_eq!(serde_json::from_str::<RuleId>(&json).unwrap(), rule);
        }
    }

    #[test]
    fn all_is_in_evaluation_order() {
        let mut sorted = RuleId::ALL;
        sorted.sort();
        assert_eq!(sorted, RuleId::ALL);
        assert_eq!(RuleId::ALL.first().map(|rule| rule.as_str()), Some("A1"));
        assert_eq!(RuleId::ALL.last().map(|rule| rule.as_str()), Some("F4"));
    }
}
