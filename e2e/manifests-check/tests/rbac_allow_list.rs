//! Nothing broader than the written allow-list, on either install route: each test installs one route's RBAC on
//! its own e2e control plane — the kustomize route (`manifests/overlays/openshift` and the cluster-api component),
//! or the OLM route (the committed CSV's `permissions` and `clusterPermissions` turned into Roles, ClusterRoles and
//! their bindings as OLM makes them, the bundle's own RBAC manifests in the operator namespace, and the Roles on
//! Secrets outside that namespace the admin applies after OLM, as `docs/install.md` says) — then asks the API
//! server, as `kubectl auth can-i --as system:serviceaccount:<namespace>:<name>` does (a SubjectAccessReview for
//! the ServiceAccount's user and groups), for every verb, resource and name any Role or ClusterRole bound to the
//! operator's ServiceAccount grants, in every namespace of the control plane, in `kube-system`,
//! `openshift-cluster-version` and cluster-wide. Every "yes" must be on the allow-list ([`ALLOW_LIST`], and
//! [`OLM_CLUSTER_WIDE`] for the OLM route), every entry of the list must be granted (the list is what the route
//! needs, and `docs/install.md` § "What the operator may do" prints it), and the escalation of a token Secret
//! created and read back elsewhere ([`MUST_DENY`]) must be refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ListParams, PostParams};
use kube::core::ObjectMeta;
use serde_json::Value;
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions};

const OPERATOR_NAMESPACE: &str = "openshift-windows-machine-config-operator";
const OPERATOR_NAME: &str = "windows-machine-config-operator";
const CLUSTER_API_NAMESPACE: &str = "openshift-cluster-api";
/// A namespace whose `default` ServiceAccount is cluster-admin on OpenShift (the CVO's binding).
const CLUSTER_VERSION_NAMESPACE: &str = "openshift-cluster-version";

/// One allowed access: verbs, API groups, resources (`resource/subresource`), where (`*`: every namespace and
/// cluster-wide; else that namespace only) and names (empty: any name).
struct Allowed {
    verbs: &'static [&'static str],
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    namespace: &'static str,
    names: &'static [&'static str],
}

const fn allowed(
    verbs: &'static [&'static str],
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    namespace: &'static str,
    names: &'static [&'static str],
) -> Allowed {
    Allowed { verbs, groups, resources, namespace, names }
}

const READ: &[&str] = &["get", "list", "watch"];
const CORE: &[&str] = &[""];
const EVENTS: &[&str] = &["", "events.k8s.io"];
const ANYWHERE: &str = "*";
const USER_DATA: &[&str] = &["windows-user-data"];
const DAEMON: &[&str] = &["windows-instance-config-daemon"];

/// What both routes grant the operator's ServiceAccount.
const ALLOW_LIST: &[Allowed] = &[
    // Cluster-wide: Nodes, drain, CSR approval for the two kubelet signers, cluster facts, token reviews.
    allowed(&["get", "list", "watch", "patch", "delete"], CORE, &["nodes"], ANYWHERE, &[]),
    allowed(&["get"], CORE, &["namespaces"], ANYWHERE, &[CLUSTER_API_NAMESPACE]),
    allowed(READ, CORE, &["pods"], ANYWHERE, &[]),
    allowed(&["create"], CORE, &["pods/eviction"], ANYWHERE, &[]),
    allowed(READ, &["policy"], &["poddisruptionbudgets"], ANYWHERE, &[]),
    allowed(READ, &["certificates.k8s.io"], &["certificatesigningrequests"], ANYWHERE, &[]),
    allowed(&["update", "patch"], &["certificates.k8s.io"], &["certificatesigningrequests/approval"], ANYWHERE, &[]),
    allowed(
        &["approve"],
        &["certificates.k8s.io"],
        &["signers"],
        ANYWHERE,
        &["kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"],
    ),
    allowed(
        READ,
        &["config.openshift.io"],
        &["infrastructures", "networks", "proxies", "apiservers", "imagedigestmirrorsets", "imagetagmirrorsets"],
        ANYWHERE,
        &[],
    ),
    allowed(READ, &["operator.openshift.io"], &["networks"], ANYWHERE, &[]),
    allowed(READ, &["machineconfiguration.openshift.io"], &["controllerconfigs", "machineconfigs"], ANYWHERE, &[]),
    allowed(&["create"], &["authentication.k8s.io"], &["tokenreviews"], ANYWHERE, &[]),
    allowed(&["create"], &["authorization.k8s.io"], &["subjectaccessreviews"], ANYWHERE, &[]),
    allowed(
        &["delete"],
        &["rbac.authorization.k8s.io"],
        &["clusterroles", "clusterrolebindings"],
        ANYWHERE,
        &["windows-instance-config-daemon", "system-wicd-nodes"],
    ),
    // The operator namespace.
    allowed(&["get", "list", "watch", "create"], CORE, &["configmaps"], OPERATOR_NAMESPACE, &[]),
    allowed(&["patch"], CORE, &["configmaps"], OPERATOR_NAMESPACE, &["trusted-ca"]),
    // The operator's copy of each host's pinned SSH key, and the Go operator's entries it removes on release.
    allowed(
        &["patch"],
        CORE,
        &["configmaps"],
        OPERATOR_NAMESPACE,
        &["windows-instance-host-keys", "windows-ssh-host-keys"],
    ),
    allowed(READ, CORE, &["secrets"], OPERATOR_NAMESPACE, &[]),
    allowed(
        &["get", "list", "watch", "create", "update", "patch", "delete"],
        &["windowsmachineconfig.openshift.io"],
        &["windowsinstances"],
        OPERATOR_NAMESPACE,
        &[],
    ),
    allowed(
        &["get", "update", "patch"],
        &["windowsmachineconfig.openshift.io"],
        &["windowsinstances/status"],
        OPERATOR_NAMESPACE,
        &[],
    ),
    allowed(
        &["update"],
        &["windowsmachineconfig.openshift.io"],
        &["windowsinstances/finalizers"],
        OPERATOR_NAMESPACE,
        &[],
    ),
    allowed(&["delete"], CORE, &["serviceaccounts", "secrets"], OPERATOR_NAMESPACE, DAEMON),
    allowed(&["delete"], &["rbac.authorization.k8s.io"], &["roles", "rolebindings"], OPERATOR_NAMESPACE, DAEMON),
    allowed(&["create", "patch"], EVENTS, &["events"], OPERATOR_NAMESPACE, &[]),
    allowed(&["create"], &["coordination.k8s.io"], &["leases"], OPERATOR_NAMESPACE, &[]),
    allowed(&["get", "update", "patch"], &["coordination.k8s.io"], &["leases"], OPERATOR_NAMESPACE, &[OPERATOR_NAME]),
    allowed(&["create"], CORE, &["serviceaccounts/token"], OPERATOR_NAMESPACE, &["cloud-node-manager"]),
    // Other namespaces, each by name.
    allowed(&["create"], CORE, &["serviceaccounts/token"], "openshift-machine-config-operator", &["node-bootstrapper"]),
    allowed(&["create", "patch"], EVENTS, &["events"], "default", &[]),
    allowed(READ, CORE, &["secrets"], "openshift-config", &["pull-secret"]),
    allowed(&["create"], CORE, &["secrets"], "openshift-machine-api", &[]),
    allowed(&["get", "list", "watch", "update", "patch"], CORE, &["secrets"], "openshift-machine-api", USER_DATA),
    allowed(
        &["get", "list", "watch", "delete"],
        &["machine.openshift.io"],
        &["machines"],
        "openshift-machine-api",
        &[],
    ),
    allowed(&["create", "patch"], EVENTS, &["events"], "openshift-machine-api", &[]),
    allowed(READ, &["machine.openshift.io"], &["machinesets"], "openshift-machine-api", &[]),
    allowed(&["create"], CORE, &["secrets"], CLUSTER_API_NAMESPACE, &[]),
    allowed(&["get", "update", "patch"], CORE, &["secrets"], CLUSTER_API_NAMESPACE, USER_DATA),
];

/// What the OLM route grants cluster-wide instead of in one namespace (OLM installs a bundle's namespaced RBAC in
/// the operator namespace only): none of it reaches a Secret.
const OLM_CLUSTER_WIDE: &[Allowed] = &[
    allowed(&["create", "patch"], EVENTS, &["events"], ANYWHERE, &[]),
    allowed(&["get", "list", "watch", "delete"], &["machine.openshift.io"], &["machines"], ANYWHERE, &[]),
    allowed(READ, &["machine.openshift.io"], &["machinesets"], ANYWHERE, &[]),
    allowed(&["create"], CORE, &["serviceaccounts/token"], ANYWHERE, &["node-bootstrapper"]),
];

/// One access question: verb, API group, `resource[/subresource]`, namespace (empty: cluster-wide), name (empty:
/// none).
type Probe = (String, String, String, String, String);

/// The escalation of a token Secret created where a privileged ServiceAccount lives and read back by name.
const MUST_DENY: &[(&str, &str, &str, &str, &str)] = &[
    ("create", "", "secrets", "kube-system", ""),
    ("create", "", "secrets", CLUSTER_VERSION_NAMESPACE, ""),
    ("get", "", "secrets", CLUSTER_VERSION_NAMESPACE, "windows-user-data"),
    ("get", "", "secrets", "kube-system", "windows-user-data"),
    ("get", "", "secrets", "", "windows-user-data"),
    ("get", "", "secrets", "kube-system", "pull-secret"),
    ("create", "", "secrets", "", ""),
];

#[tokio::test]
async fn the_kustomize_route_grants_nothing_beyond_the_allow_list() -> anyhow::Result<()> {
    let control_plane =
        ControlPlane::start(ControlPlaneOptions::default()).await.context("the e2e control plane did not start")?;
    apply(&control_plane, "-k", &[manifests().join("overlays/openshift")], None).await?;
    create_namespace(&control_plane, CLUSTER_API_NAMESPACE).await?;
    apply(&control_plane, "-f", &[manifests().join("components/cluster-api/role.yaml")], None).await?;
    audit(&control_plane, &ALLOW_LIST.iter().collect::<Vec<_>>()).await
}

#[tokio::test]
async fn the_olm_route_grants_nothing_beyond_the_allow_list() -> anyhow::Result<()> {
    let control_plane =
        ControlPlane::start(ControlPlaneOptions::default()).await.context("the e2e control plane did not start")?;
    install_as_olm_would(&control_plane).await?;
    // What docs/install.md has the admin apply after OLM: the Roles on Secrets outside the operator namespace.
    let overlay = manifests().join("overlays/openshift");
    let admin_roles = [overlay.join("machine-api-rbac.yaml"), overlay.join("pull-secret-rbac.yaml")];
    apply(&control_plane, "-f", &admin_roles, None).await?;
    create_namespace(&control_plane, CLUSTER_API_NAMESPACE).await?;
    apply(&control_plane, "-f", &[manifests().join("components/cluster-api/role.yaml")], None).await?;
    let list: Vec<&Allowed> = ALLOW_LIST.iter().chain(OLM_CLUSTER_WIDE).collect();
    audit(&control_plane, &list).await
}

fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests")
}

/// `kubectl apply` as admin, `mode` (`-k` or `-f`) before each path, in `namespace` when given.
async fn apply(
    control_plane: &ControlPlane,
    mode: &str,
    paths: &[PathBuf],
    namespace: Option<&str>,
) -> anyhow::Result<()> {
    let mut command = control_plane.kubectl();
    command.arg("apply");
    if let Some(namespace) = namespace {
        command.args(["--namespace", namespace]);
    }
    for path in paths {
        command.arg(mode).arg(path);
    }
    let output = command.output().await?;
    ensure!(
        output.status.success(),
        "kubectl apply {mode} {paths:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

async fn create_namespace(control_plane: &ControlPlane, name: &str) -> anyhow::Result<()> {
    let namespace = Namespace { metadata: named(name, None), ..Namespace::default() };
    Api::<Namespace>::all(control_plane.admin_client()).create(&PostParams::default(), &namespace).await?;
    Ok(())
}

fn named(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: namespace.map(str::to_owned), ..ObjectMeta::default() }
}

fn operator_subject(account: &str) -> Subject {
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: account.to_owned(),
        namespace: Some(OPERATOR_NAMESPACE.to_owned()),
        ..Subject::default()
    }
}

/// What OLM makes of the committed bundle for an OwnNamespace install into the operator namespace: the
/// ServiceAccounts the CSV names, a Role and RoleBinding per `permissions` entry, a ClusterRole and
/// ClusterRoleBinding per `clusterPermissions` entry, and the bundle's RBAC manifests (namespaced ones in the
/// operator namespace, whatever they say).
async fn install_as_olm_would(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundle/manifests");
    let text = std::fs::read_to_string(bundle.join(format!("{OPERATOR_NAME}.clusterserviceversion.yaml")))?;
    let csv: Value = serde_saphyr::from_str(&text)?;
    let client = control_plane.admin_client();
    let create = PostParams::default();
    let install = &csv["spec"]["install"]["spec"];
    for (scope, entries) in
        [("permissions", &install["permissions"]), ("clusterPermissions", &install["clusterPermissions"])]
    {
        for (index, entry) in entries.as_array().into_iter().flatten().enumerate() {
            let account =
                entry["serviceAccountName"].as_str().context("a permissions entry names no ServiceAccount")?;
            let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
            if accounts.get_opt(account).await?.is_none() {
                accounts
                    .create(&create, &ServiceAccount { metadata: named(account, None), ..ServiceAccount::default() })
                    .await?;
            }
            let rules: Vec<PolicyRule> = serde_json::from_value(entry["rules"].clone())?;
            let name = format!("olm-{scope}-{index}").to_lowercase();
            let subjects = Some(vec![operator_subject(account)]);
            if scope == "permissions" {
                let role = Role { metadata: named(&name, Some(OPERATOR_NAMESPACE)), rules: Some(rules) };
                Api::<Role>::namespaced(client.clone(), OPERATOR_NAMESPACE).create(&create, &role).await?;
                let role_ref = RoleRef {
                    api_group: "rbac.authorization.k8s.io".to_owned(),
                    kind: "Role".to_owned(),
                    name: name.clone(),
                };
                let binding = RoleBinding { metadata: named(&name, Some(OPERATOR_NAMESPACE)), role_ref, subjects };
                Api::<RoleBinding>::namespaced(client.clone(), OPERATOR_NAMESPACE).create(&create, &binding).await?;
            } else {
                let role = ClusterRole { metadata: named(&name, None), rules: Some(rules), ..ClusterRole::default() };
                Api::<ClusterRole>::all(client.clone()).create(&create, &role).await?;
                let role_ref = RoleRef {
                    api_group: "rbac.authorization.k8s.io".to_owned(),
                    kind: "ClusterRole".to_owned(),
                    name: name.clone(),
                };
                let binding = ClusterRoleBinding { metadata: named(&name, None), role_ref, subjects };
                Api::<ClusterRoleBinding>::all(client.clone()).create(&create, &binding).await?;
            }
        }
    }
    let rbac_files: Vec<PathBuf> = std::fs::read_dir(&bundle)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|path| {
            let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            ["_role.yaml", "_rolebinding.yaml", "_clusterrole.yaml", "_clusterrolebinding.yaml"]
                .iter()
                .any(|suffix| name.ends_with(suffix))
        })
        .collect();
    apply(control_plane, "-f", &rbac_files, Some(OPERATOR_NAMESPACE)).await
}

/// Every rule of every Role and ClusterRole bound to the operator's ServiceAccount.
async fn granted_rules(client: &kube::Client) -> anyhow::Result<Vec<PolicyRule>> {
    let binds_operator = |subjects: &Option<Vec<Subject>>| {
        subjects.iter().flatten().any(|subject| {
            subject.kind == "ServiceAccount"
                && subject.name == OPERATOR_NAME
                && subject.namespace.as_deref() == Some(OPERATOR_NAMESPACE)
        })
    };
    let mut rules = Vec::new();
    for binding in Api::<ClusterRoleBinding>::all(client.clone()).list(&ListParams::default()).await? {
        if binds_operator(&binding.subjects) {
            let role = Api::<ClusterRole>::all(client.clone()).get(&binding.role_ref.name).await?;
            rules.extend(role.rules.unwrap_or_default());
        }
    }
    for binding in Api::<RoleBinding>::all(client.clone()).list(&ListParams::default()).await? {
        if !binds_operator(&binding.subjects) {
            continue;
        }
        let namespace = binding.metadata.namespace.clone().unwrap_or_default();
        let role_rules = if binding.role_ref.kind == "ClusterRole" {
            Api::<ClusterRole>::all(client.clone()).get(&binding.role_ref.name).await?.rules
        } else {
            Api::<Role>::namespaced(client.clone(), &namespace).get(&binding.role_ref.name).await?.rules
        };
        rules.extend(role_rules.unwrap_or_default());
    }
    Ok(rules)
}

/// Every question the rules raise, in every namespace of `namespaces` and cluster-wide.
fn probes(rules: &[PolicyRule], namespaces: &BTreeSet<String>) -> BTreeSet<Probe> {
    let mut probes = BTreeSet::new();
    for rule in rules {
        let names =
            rule.resource_names.clone().filter(|names| !names.is_empty()).unwrap_or_else(|| vec![String::new()]);
        for verb in &rule.verbs {
            for group in rule.api_groups.iter().flatten() {
                for resource in rule.resources.iter().flatten() {
                    for name in &names {
                        for namespace in namespaces.iter().chain([&String::new()]) {
                            probes.insert((
                                verb.clone(),
                                group.clone(),
                                resource.clone(),
                                namespace.clone(),
                                name.clone(),
                            ));
                        }
                    }
                }
            }
        }
    }
    probes
}

/// Whether `entry` allows `probe`.
fn covers(entry: &Allowed, (verb, group, resource, namespace, name): &Probe) -> bool {
    entry.verbs.contains(&verb.as_str())
        && entry.groups.contains(&group.as_str())
        && entry.resources.contains(&resource.as_str())
        && (entry.namespace == ANYWHERE || (!namespace.is_empty() && entry.namespace == namespace))
        && (entry.names.is_empty() || (!name.is_empty() && entry.names.contains(&name.as_str())))
}

/// `kubectl auth can-i --as system:serviceaccount:<operator namespace>:<operator>`: a SubjectAccessReview for the
/// ServiceAccount's user and the groups its token carries.
async fn can_i(client: &kube::Client, (verb, group, resource, namespace, name): &Probe) -> anyhow::Result<bool> {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource.as_str(), ""));
    let non_empty = |value: &str| (!value.is_empty()).then(|| value.to_owned());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_NAME}")),
            groups: Some(vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{OPERATOR_NAMESPACE}"),
                "system:authenticated".to_owned(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.clone()),
                group: Some(group.clone()),
                resource: Some(resource.to_owned()),
                subresource: non_empty(subresource),
                namespace: non_empty(namespace),
                name: non_empty(name),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone()).create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

fn describe((verb, group, resource, namespace, name): &Probe) -> String {
    let scope = if namespace.is_empty() { "cluster-wide".to_owned() } else { format!("in namespace {namespace}") };
    let name = if name.is_empty() { String::new() } else { format!(" {name:?}") };
    format!("{verb} {group}/{resource}{name} {scope}")
}

/// Asks about every probe; fails naming each grant the list does not hold, each entry nothing grants, and each
/// escalation step allowed.
async fn audit(control_plane: &ControlPlane, list: &[&Allowed]) -> anyhow::Result<()> {
    let client = control_plane.admin_client();
    let mut namespaces: BTreeSet<String> = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter_map(|namespace| namespace.metadata.name)
        .collect();
    namespaces.extend(["kube-system".to_owned(), CLUSTER_VERSION_NAMESPACE.to_owned()]);
    let rules = granted_rules(&client).await?;
    let mut problems = Vec::new();
    let mut used = vec![false; list.len()];
    let mut granted = 0;
    for probe in probes(&rules, &namespaces) {
        if !can_i(&client, &probe).await? {
            continue;
        }
        granted += 1;
        let covering: Vec<usize> = (0..list.len()).filter(|index| covers(list[*index], &probe)).collect();
        if covering.is_empty() {
            problems.push(format!("granted beyond the allow-list: {}", describe(&probe)));
        }
        for index in covering {
            used[index] = true;
        }
    }
    for (entry, used) in list.iter().zip(&used) {
        if !used {
            problems.push(format!(
                "on the allow-list but not granted: {:?} {:?}/{:?} {:?} in {}",
                entry.verbs, entry.groups, entry.resources, entry.names, entry.namespace
            ));
        }
    }
    for (verb, group, resource, namespace, name) in MUST_DENY {
        let probe: Probe = (
            (*verb).to_owned(),
            (*group).to_owned(),
            (*resource).to_owned(),
            (*namespace).to_owned(),
            (*name).to_owned(),
        );
        if can_i(&client, &probe).await? {
            problems.push(format!("escalation step allowed: {}", describe(&probe)));
        }
    }
    ensure!(
        problems.is_empty(),
        "the operator's ServiceAccount ({granted} grants asked about) differs from the allow-list:\n{}",
        problems.join("\n")
    );
    Ok(())
}
