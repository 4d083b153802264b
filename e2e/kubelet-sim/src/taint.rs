//! Taints (`key[=value]:Effect`) and node labels (`--node-labels k=v,...`) as the kubelet parses and checks them,
//! including the rule that `--node-labels` may not set `kubernetes.io` / `k8s.io` labels the kubelet does not own.

use std::collections::BTreeMap;

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaintEffect {
    /// `NoSchedule`.
    NoSchedule,
    /// `PreferNoSchedule`.
    PreferNoSchedule,
    /// `NoExecute`.
    NoExecute,
}

impl TaintEffect {
    /// The effect named exactly `text`.
    ///
    /// ```
    /// use wmco_kubelet_sim::TaintEffect;
    /// assert_eq!(TaintEffect::parse("NoSchedule").map(TaintEffect::as_str), Some("NoSchedule"));
    /// assert_eq!(TaintEffect::parse("noschedule"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A taint the kubelet registers its Node with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

/// Parses `--register-with-taints`: comma-separated `key=value:Effect` or `key:Effect`.
pub(crate) fn parse_taints(text: &str) -> Result<Vec<Taint>, String> {
    text.split(',')
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (key_value, effect) = item.split_once(':').ok_or_else(|| format!("invalid taint spec: {item}"))?;
            let effect = TaintEffect::parse(effect)
                .ok_or_else(|| format!("invalid taint effect: {effect}, unsupported taint effect"))?;
            let (key, value) = key_value.split_once('=').unwrap_or((key_value, ""));
            if key.is_empty() {
                return Err(format!("invalid taint spec: {item}"));
            }
            Ok(Taint { key: key.to_owned(), value: value.to_owned(), effect })
        })
        .collect()
}

/// Parses `--node-labels` (`k=v,k2=v2`) and refuses keys in the `kubernetes.io` / `k8s.io` namespaces the
/// kubelet does not own, with the kubelet's message.
pub(crate) fn parse_node_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    for item in text.split(',').filter(|item| !item.is_empty()) {
        let (key, value) = item.split_once('=').ok_or_else(|| format!("invalid label {item:?}: want key=value"))?;
        if key.is_empty() {
            return Err(format!("invalid label {item:?}: empty key"));
        }
        labels.insert(key.to_owned(), value.to_owned());
    }
    let forbidden: Vec<&str> = labels.keys().map(String::as_str).filter(|key| !node_label_allowed(key)).collect();
    if !forbidden.is_empty() {
        return Err(format!(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [{}]; --node-labels in the \
             'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) \
             or be in the specifically allowed set",
            forbidden.join(" ")
        ));
    }
    Ok(labels)
}

/// Labels outside `kubernetes.io`/`k8s.io` are the admin's; inside, only the kubelet's own are allowed.
fn node_label_allowed(key: &str) -> bool {
    let Some((namespace, _)) = key.split_once('/') else { return true };
    let in_namespace = |domain: &str| namespace == domain || namespace.ends_with(&format!(".{domain}"));
    if !in_namespace("kubernetes.io") && !in_namespace("k8s.io") {
        return true;
    }
    is_kubelet_label(key)
}

/// The labels the kubelet may set on its own Node (`IsKubeletLabel` in k8s.io/kubelet well_known_labels.go).
pub(crate) fn is_kubelet_label(key: &str) -> bool {
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "node.kubernetes.io/windows-build",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    ];
    if KUBELET_LABELS.contains(&key) {
        return true;
    }
    let Some((namespace, _)) = key.split_once('/') else { return false };
    ["kubelet.kubernetes.io", "node.kubernetes.io"]
        .iter()
        .any(|allowed| namespace == *allowed || namespace.ends_with(&format!(".{allowed}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_parse_with_and_without_values() {
        assert_eq!(
            parse_taints("os=Windows:NoSchedule,dedicated:NoExecute").unwrap(),
            [
                Taint { key: "os".into(), value: "Windows".into(), effect: TaintEffect::NoSchedule },
                Taint { key: "dedicated".into(), value: String::new(), effect: TaintEffect::NoExecute },
            ]
        );
        assert_eq!(parse_taints("os=Windows").unwrap_err(), "invalid taint spec: os=Windows");
        assert_eq!(
            parse_taints("os=Windows:Never").unwrap_err(),
            "invalid taint effect: Never, unsupported taint effect"
        );
    }

    #[test]
    fn node_labels_allow_the_product_label_and_refuse_roles() {
        let labels = parse_node_labels("node.openshift.io/os_id=Windows,node.kubernetes.io/pool=a").unwrap();
        assert_eq!(labels["node.openshift.io/os_id"], "Windows");
        assert_eq!(labels["node.kubernetes.io/pool"], "a");
        let refused = parse_node_labels("node-role.kubernetes.io/worker=,a=b").unwrap_err();
        assert!(refused.starts_with(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]"
        ));
        assert!(parse_node_labels("node-restriction.kubernetes.io/x=y").is_err());
        assert!(parse_node_labels("example.k8s.io/x=y").is_err());
        assert_eq!(parse_node_labels("novalue").unwrap_err(), "invalid label \"novalue\": want key=value");
    }
}
