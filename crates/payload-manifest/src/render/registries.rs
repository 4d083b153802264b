//! containerd's registry mirror files: one `hosts.toml` per source registry host under
//! `C:\k\containerd\registries`, from the ImageDigestMirrorSet / ImageTagMirrorSet rules and the pull secret.
//!
//! Merge rules (anchor §8.5): rules are grouped by source registry host; within a host, mirrors keep their first
//! position and are deduplicated by mirror location, a tag mirror (`pull` + `resolve`) winning over a digest mirror
//! (`pull`); `NeverContactSource` on any rule of a host wins, and then the first mirror becomes the `server`.
//! A mirror's location is the mirror minus the path suffix it shares with its source, so containerd, which appends
//! the full repository path, reaches the right repository. Output is sorted by source host.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::SerializeMap;

use super::destinations::{REGISTRIES_DIR, REGISTRIES_INDEX, destination};
use super::{ImageMirrorRule, MirrorKind, MirrorSourcePolicy, PullSecret, RenderError, RenderedFile, SecretToken};

/// The merged mirror configuration of one source registry host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryHosts {
    /// The source registry, `host[:port]`.
    pub source_host: String,
    /// Whether the source may never be contacted.
    pub never_contact_source: bool,
    /// The mirrors, in priority order.
    pub mirrors: Vec<MirrorHost>,
}

/// One mirror of a source registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorHost {
    /// `host[:port][/path prefix]` of the mirror, without the repository path it shares with the source.
    pub location: String,
    /// Tag mirrors may also resolve tags; digest mirrors only pull by digest.
    pub kind: MirrorKind,
    /// The pull-secret credentials for the mirror, if any.
    pub auth: Option<SecretToken>,
}

impl MirrorHost {
    /// containerd's URL of the mirror: `https://<host>/v2[/<prefix>]` (used with `override_path = true`).
    pub fn url(&self) -> String {
        match self.location.split_once('/') {
            Some((host, prefix)) => format!("https://{host}/v2/{prefix}"),
            None => format!("https://{}/v2", self.location),
        }
    }

    fn capabilities(&self) -> &'static [&'static str] {
        match self.kind {
            MirrorKind::Digest => &["pull"],
            MirrorKind::Tag => &["pull", "resolve"],
        }
    }
}

/// Merges the mirror rules per source registry host (see the module documentation). Hosts without mirrors are
/// left out.
///
/// ```
/// use wmco_payload_manifest::render::{ImageMirrorRule, MirrorKind, MirrorSourcePolicy, plan_registry_hosts};
///
/// let rules = vec![ImageMirrorRule {
///     source: "quay.io/openshift-release-dev/ocp-release".into(),
///     mirrors: vec!["mirror.example.com:5000/ocp/openshift-release-dev/ocp-release".into()],
///     kind: MirrorKind::Digest,
///     source_policy: MirrorSourcePolicy::AllowContactingSource,
/// }];
/// let hosts = plan_registry_hosts(&rules, None).unwrap();
/// assert_eq!(hosts[0].source_host, "quay.io");
/// assert_eq!(hosts[0].mirrors[0].url(), "https://mirror.example.com:5000/v2/ocp");
/// ```
pub fn plan_registry_hosts(
    rules: &[ImageMirrorRule],
    pull_secret: Option<&PullSecret>,
) -> Result<Vec<RegistryHosts>, RenderError> {
    let mut by_host: BTreeMap<String, RegistryHosts> = BTreeMap::new();
    for rule in rules {
        let (source_host, source_path) = split_location(&rule.source).ok_or(RenderError::InvalidMirrorRule {
            source_location: rule.source.clone(),
            reason: "the source has no registry host",
        })?;
        let hosts = by_host.entry(source_host.to_owned()).or_insert_with(|| RegistryHosts {
            source_host: source_host.to_owned(),
            never_contact_source: false,
            mirrors: Vec::new(),
        });
        hosts.never_contact_source |= rule.source_policy == MirrorSourcePolicy::NeverContactSource;
        for mirror in &rule.mirrors {
            if split_location(mirror).is_none() {
                return Err(RenderError::InvalidMirrorRule {
                    source_location: rule.source.clone(),
                    reason: "a mirror has no registry host",
                });
            }
            let location = strip_shared_suffix(mirror, source_path);
            match hosts.mirrors.iter_mut().find(|known| known.location == location) {
                Some(known) => known.kind = known.kind.max(rule.kind),
                None => hosts.mirrors.push(MirrorHost {
                    auth: pull_secret.and_then(|secret| secret.auth_for(&location)).cloned(),
                    location,
                    kind: rule.kind,
                }),
            }
        }
    }
    Ok(by_host.into_values().filter(|hosts| !hosts.mirrors.is_empty()).collect())
}

/// One `hosts.toml` per source registry host, at `C:\k\containerd\registries\<host dir>\hosts.toml`, and the
/// directory's index ([`REGISTRIES_INDEX`]: the host directory names, one per line, always written).
pub fn registry_hosts_files(
    rules: &[ImageMirrorRule],
    pull_secret: Option<&PullSecret>,
) -> Result<Vec<RenderedFile>, RenderError> {
    let plan = plan_registry_hosts(rules, pull_secret)?;
    let mut files = plan.iter().map(hosts_file).collect::<Result<Vec<_>, _>>()?;
    let index: String = plan.iter().map(|hosts| format!("{}\r\n", host_directory_name(&hosts.source_host))).collect();
    let index_path = destination(REGISTRIES_INDEX, "the registries index")?;
    files.push(RenderedFile::new(index_path, index.into_bytes()));
    Ok(files)
}

fn hosts_file(hosts: &RegistryHosts) -> Result<RenderedFile, RenderError> {
    let file_label = format!("hosts.toml of {}", hosts.source_host);
    let directory = destination(REGISTRIES_DIR, &file_label)?;
    let path = directory
        .join(&host_directory_name(&hosts.source_host))
        .and_then(|dir| dir.join("hosts.toml"))
        .map_err(|source| RenderError::Destination { file: file_label.clone(), source })?;
    let server_mirror = hosts.mirrors.first().filter(|_| hosts.never_contact_source);
    let document = HostsToml {
        server: server_mirror.map_or_else(|| format!("https://{}", hosts.source_host), MirrorHost::url),
        server_settings: server_mirror.map(HostEntry::of),
        hosts: OrderedHosts(hosts.mirrors.iter().map(|mirror| (mirror.url(), HostEntry::of(mirror))).collect()),
    };
    let text = toml::to_string(&document)
        .map_err(|error| RenderError::Serialize { file: "registry hosts.toml", message: error.to_string() })?;
    Ok(RenderedFile::new(path, text.into_bytes()))
}

/// containerd's directory name for a registry host on Windows, where `:` is not allowed: `host:port` becomes
/// `host_port_`.
fn host_directory_name(host: &str) -> String {
    match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()) => {
            format!("{name}_{port}_")
        }
        _ => host.to_owned(),
    }
}

/// Splits `host[:port][/path]` into the host and the (possibly empty) path.
fn split_location(location: &str) -> Option<(&str, &str)> {
    let (host, path) = location.split_once('/').unwrap_or((location, ""));
    (!host.is_empty()).then_some((host, path))
}

/// The mirror without the trailing path components it shares with the source path.
fn strip_shared_suffix(mirror: &str, source_path: &str) -> String {
    let mut mirror_components: Vec<&str> = mirror.split('/').collect();
    let mut source_components: Vec<&str> = source_path.split('/').filter(|component| !component.is_empty()).collect();
    while mirror_components.len() > 1
        && mirror_components.last().is_some()
        && mirror_components.last() == source_components.last()
    {
        mirror_components.pop();
        source_components.pop();
    }
    mirror_components.join("/")
}

#[derive(Serialize)]
struct HostsToml {
    server: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    server_settings: Option<HostEntry>,
    #[serde(rename = "host")]
    hosts: OrderedHosts,
}

/// `[host."<url>"]` tables in priority order (containerd tries them in file order, so no sorted map).
struct OrderedHosts(Vec<(String, HostEntry)>);

impl Serialize for OrderedHosts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (url, entry) in &self.0 {
            map.serialize_entry(url, entry)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct HostEntry {
    capabilities: &'static [&'static str],
    override_path: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<Header>,
}

#[derive(Serialize)]
struct Header {
    authorization: String,
}

impl HostEntry {
    fn of(mirror: &MirrorHost) -> Self {
        Self {
            capabilities: mirror.capabilities(),
            override_path: true,
            header: mirror.auth.as_ref().map(|auth| Header { authorization: format!("Basic {}", auth.expose()) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Source host, never-contact flag, and (mirror URL, kind) pairs.
    type HostSummary = (String, bool, Vec<(String, MirrorKind)>);

    fn rule(source: &str, mirrors: &[&str], kind: MirrorKind, policy: MirrorSourcePolicy) -> ImageMirrorRule {
        ImageMirrorRule {
            source: source.into(),
            mirrors: mirrors.iter().map(|mirror| (*mirror).to_owned()).collect(),
            kind,
            source_policy: policy,
        }
    }

    #[test]
    fn shared_suffix_is_removed_component_wise() {
        assert_eq!(strip_shared_suffix("m.io/mirror/org/repo", "org/repo"), "m.io/mirror");
        assert_eq!(strip_shared_suffix("m.io/org/repo", "org/repo"), "m.io");
        assert_eq!(strip_shared_suffix("m.io/other/repo", "org/repo"), "m.io/other");
        assert_eq!(strip_shared_suffix("m.io/x/y", "org/repo"), "m.io/x/y");
        assert_eq!(strip_shared_suffix("m.io", ""), "m.io");
        assert_eq!(strip_shared_suffix("repo/repo", "repo"), "repo");
    }

    #[test]
    fn host_directory_names_replace_the_port_colon() {
        assert_eq!(host_directory_name("registry.local:5000"), "registry.local_5000_");
        assert_eq!(host_directory_name("quay.io"), "quay.io");
    }

    #[test]
    fn merges_per_host_dedupes_mirrors_and_lets_tag_and_never_contact_win() {
        let rules = vec![
            rule(
                "quay.io/a/app",
                &["m1.io/a/app", "m2.io/x/a/app"],
                MirrorKind::Digest,
                MirrorSourcePolicy::AllowContactingSource,
            ),
            rule("quay.io/b/app", &["m1.io/b/app"], MirrorKind::Tag, MirrorSourcePolicy::NeverContactSource),
            rule(
                "docker.io/library",
                &["m3.io/library"],
                MirrorKind::Digest,
                MirrorSourcePolicy::AllowContactingSource,
            ),
            rule("empty.io/x", &[], MirrorKind::Digest, MirrorSourcePolicy::AllowContactingSource),
        ];
        let hosts = plan_registry_hosts(&rules, None).unwrap();
        let summary: Vec<HostSummary> = hosts
            .iter()
            .map(|host| {
                (
                    host.source_host.clone(),
                    host.never_contact_source,
                    host.mirrors.iter().map(|mirror| (mirror.url(), mirror.kind)).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("docker.io".into(), false, vec![("https://m3.io/v2".into(), MirrorKind::Digest)]),
                (
                    "quay.io".into(),
                    true,
                    vec![
                        ("https://m1.io/v2".into(), MirrorKind::Tag),
                        ("https://m2.io/v2/x".into(), MirrorKind::Digest)
                    ]
                ),
            ]
        );
    }

    #[test]
    fn rejects_rules_without_a_registry_host() {
        let error = plan_registry_hosts(
            &[rule("/x", &[], MirrorKind::Digest, MirrorSourcePolicy::AllowContactingSource)],
            None,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "image mirror rule for source \"/x\" is invalid: the source has no registry host"
        );
    }
}
