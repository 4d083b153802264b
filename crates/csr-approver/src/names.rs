//! The fixed names of the kubelet certificate protocol (signers, requester identities, subject values) and the
//! RFC 1123 name check, so every rule compares against one spelling.

/// Signer of kubelet client certificates (bootstrap and renewal).
pub const SIGNER_KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates.
pub const SIGNER_KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// The requester of bootstrap CSRs: the node-bootstrapper ServiceAccount whose token is in the bootstrap kubeconfig.
pub const NODE_BOOTSTRAPPER_USERNAME: &str =
    "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";
/// The exact group set of the node-bootstrapper ServiceAccount.
pub const NODE_BOOTSTRAPPER_GROUPS: [&str; 3] =
    ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"];
/// The exact group set of a kubelet authenticated with its node client certificate.
pub const NODE_GROUPS: [&str; 2] = ["system:nodes", "system:authenticated"];
/// Prefix of every node identity's common name and username.
pub const NODE_NAME_PREFIX: &str = "system:node:";
/// The only organization a kubelet certificate may carry.
pub const NODES_ORGANIZATION: &str = "system:nodes";
/// The `spec.extra` key the apiserver sets when a ServiceAccount token was minted for a pod.
pub const POD_NAME_EXTRA_KEY: &str = "authentication.kubernetes.io/pod-name";
/// The label every Windows Node carries.
pub const OS_LABEL: &str = "kubernetes.io/os";
/// The value of [`OS_LABEL`] on Windows Nodes.
pub const OS_WINDOWS: &str = "windows";

/// Which of the two kubelet signers a CSR names; client and serving are told apart by signer only (rule A2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KubeletSigner {
    /// `kubernetes.io/kube-apiserver-client-kubelet`.
    Client,
    /// `kubernetes.io/kubelet-serving`.
    Serving,
}

impl KubeletSigner {
    /// The signer named by `spec.signerName`, or `None` for any other signer.
    ///
    /// ```
    /// use wmco_csr_approver::KubeletSigner;
    /// assert_eq!(KubeletSigner::from_name("kubernetes.io/kubelet-serving"), Some(KubeletSigner::Serving));
    /// assert_eq!(KubeletSigner::from_name("kubernetes.io/kube-apiserver-client"), None);
    /// ```
    pub fn from_name(signer_name: &str) -> Option<Self> {
        match signer_name {
            SIGNER_KUBELET_CLIENT => Some(Self::Client),
            SIGNER_KUBELET_SERVING => Some(Self::Serving),
            _ => None,
        }
    }

    /// The signer's name as written in `spec.signerName`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => SIGNER_KUBELET_CLIENT,
            Self::Serving => SIGNER_KUBELET_SERVING,
        }
    }
}

/// Whether `name` is a lowercase RFC 1123 subdomain: at most 253 characters, dot-separated labels of 1–63
/// characters from `a-z`, `0-9` and `-` that start and end with an alphanumeric (so no spaces, no trailing dot).
///
/// ```
/// use wmco_csr_approver::is_rfc1123_subdomain;
/// assert!(is_rfc1123_subdomain("win-1.example.com"));
/// assert!(!is_rfc1123_subdomain("Win-1"));
/// assert!(!is_rfc1123_subdomain("win-1."));
/// ```
pub fn is_rfc1123_subdomain(name: &str) -> bool {
    !name.is_empty() && name.len() <= 253 && name.split('.').all(is_rfc1123_label)
}

fn is_rfc1123_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let alphanumeric = |byte: &u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            bytes.len() <= 63
                && alphanumeric(first)
                && alphanumeric(last)
                && bytes.iter().all(|byte| alphanumeric(byte) || *byte == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_accepts_lowercase_labels() {
        assert!(is_rfc1123_subdomain("a"));
        assert!(is_rfc1123_subdomain("win-01.corp.example"));
        assert!(is_rfc1123_subdomain(&"a".repeat(63)));
    }

    #[test]
    fn rfc1123_refuses_bad_names() {
        for bad in ["", "WIN", "win 1", "win_1", "-win", "win-", "a..b", ".a", "a.", "*.a"] {
            assert!(!is_rfc1123_subdomain(bad), "{bad:?} accepted");
        }
        assert!(!is_rfc1123_subdomain(&"a".repeat(64)));
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(!is_rfc1123_subdomain(&long));
    }
}
