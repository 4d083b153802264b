//! Fixed names of the cluster-facing contract: the field manager, the `WindowsInstance` finalizer and annotation,
//! and the Node labels and annotations kept from the Go operator so dashboards and tooling keep working
//! (design §3, anchor §8.1).

/// The field manager of every server-side apply the operator sends, except the one below.
pub const FIELD_MANAGER: &str = "wmco";

/// The field manager that alone owns `status.approvedBootstrapKeySha256` of a `WindowsInstance`: the CSR
/// controller sets it, the configuration flow clears it when an attempt starts, and no other status write (all
/// under [`FIELD_MANAGER`]) can drop it.
pub const BOOTSTRAP_KEY_FIELD_MANAGER: &str = "wmco-bootstrap-key";

/// The finalizer on every `WindowsInstance`, released only once its host is deconfigured.
pub const INSTANCE_FINALIZER: &str = "windowsmachineconfig.openshift.io/deconfigure";

/// Node annotation: the UID of the `WindowsInstance` whose host the Node is, written by the operator only, when it
/// first finds the Node registered by that host (`ownership`). The operator touches no Node that carries another.
pub const INSTANCE_UID_ANNOTATION: &str = "windowsmachineconfig.openshift.io/instance-uid";

/// Annotation an admin sets to `"true"` on a `WindowsInstance` to remove an unreachable host without
/// deconfiguring it.
pub const FORCE_REMOVE_ANNOTATION: &str = "windowsmachineconfig.openshift.io/force-remove";

/// Annotation an admin sets on a `WindowsInstance` to ask for one reboot of its host: the value is a token (a
/// timestamp, say); a completed reboot records it on the record, so the same token never reboots twice and a new
/// one asks again. The operator never writes or removes it.
pub const REBOOT_REQUESTED_ANNOTATION: &str = "windowsmachineconfig.openshift.io/reboot-requested";

/// Node label set by the kubelet's `--node-labels` on every Windows node (`Windows`).
pub const OS_ID_LABEL: &str = "node.openshift.io/os_id";
/// The value of [`OS_ID_LABEL`] on Windows nodes.
pub const OS_ID_WINDOWS: &str = "Windows";
/// The well-known operating-system label the kubelet sets (`windows`).
pub const KUBERNETES_OS_LABEL: &str = "kubernetes.io/os";
/// Node label (`"true"`) marking a node configured from the `windows-instances` ConfigMap.
pub const BYOH_LABEL: &str = "windowsmachineconfig.openshift.io/byoh";
/// The worker role label (empty value) the operator puts on BYOH nodes.
pub const WORKER_ROLE_LABEL: &str = "node-role.kubernetes.io/worker";
/// Node label (`"true"`) counting a node toward the upgrade limit while it is upgraded.
pub const UPGRADING_LABEL: &str = "windowsmachineconfig.openshift.io/upgrading";
/// Node annotation holding the operator version the node is configured with.
pub const VERSION_ANNOTATION: &str = "windowsmachineconfig.openshift.io/version";
/// Node annotation holding the version the node is to be configured with.
pub const DESIRED_VERSION_ANNOTATION: &str = "windowsmachineconfig.openshift.io/desired-version";
/// Node annotation asking for a reboot of the host (the Go operator's contract: its presence, whatever the value,
/// asks; the operator removes it once the host is back).
pub const REBOOT_REQUIRED_ANNOTATION: &str = "windowsmachineconfig.openshift.io/reboot-required";
/// Node annotation holding the hash of the public key the node was configured with.
pub const PUB_KEY_HASH_ANNOTATION: &str = "windowsmachineconfig.openshift.io/pub-key-hash";
/// Node annotation holding the SSH user name of the host.
pub const USERNAME_ANNOTATION: &str = "windowsmachineconfig.openshift.io/username";
/// Node annotation holding the pinned SSH host key.
pub const SSH_HOST_KEY_ANNOTATION: &str = "windowsmachineconfig.openshift.io/ssh-host-key";
/// Node annotation holding the type of the pinned SSH host key.
pub const SSH_HOST_KEY_TYPE_ANNOTATION: &str = "windowsmachineconfig.openshift.io/ssh-host-key-type";
/// Node annotation, set by OVN-Kubernetes, holding the node's hybrid-overlay subnet.
pub const HYBRID_OVERLAY_SUBNET_ANNOTATION: &str = "k8s.ovn.org/hybrid-overlay-node-subnet";
/// The namespace of the machine API's Machines and MachineSets.
pub const MACHINE_API_NAMESPACE: &str = "openshift-machine-api";
/// Machine label selecting Windows Machines (`Windows`).
pub const MACHINE_OS_ID_LABEL: &str = "machine.openshift.io/os-id";
/// Machine label (`"true"`) telling the operator to leave a Machine alone.
pub const MACHINE_IGNORE_LABEL: &str = "windowsmachineconfig.openshift.io/ignore";
/// Pod annotation the kubelet sets on mirror pods of static pods.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Signer of kubelet client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

/// The namespace of the cluster's global pull secret (OpenShift).
pub const PULL_SECRET_NAMESPACE: &str = "openshift-config";
/// The cluster's global pull secret (`.dockerconfigjson`): credentials of image mirrors reach hosts' `hosts.toml`.
pub const PULL_SECRET: &str = "pull-secret";

/// The ConfigMap in the operator namespace holding the cluster's trusted CA bundle; the operator keeps it with
/// [`INJECT_TRUSTED_CA_BUNDLE_LABEL`] so OpenShift's network operator fills it.
pub const TRUSTED_CA_CONFIG_MAP: &str = "trusted-ca";
/// The label asking OpenShift's network operator to inject the cluster's trusted CA bundle into a ConfigMap.
pub const INJECT_TRUSTED_CA_BUNDLE_LABEL: &str = "config.openshift.io/inject-trusted-cabundle";
/// The key of [`TRUSTED_CA_CONFIG_MAP`] holding the PEM bundle.
pub const TRUSTED_CA_KEY: &str = "ca-bundle.crt";

/// Namespace of the ServiceAccount whose short-lived tokens bootstrap kubelets.
pub const NODE_BOOTSTRAPPER_NAMESPACE: &str = "openshift-machine-config-operator";
/// ServiceAccount whose short-lived tokens bootstrap kubelets.
pub const NODE_BOOTSTRAPPER_SERVICE_ACCOUNT: &str = "node-bootstrapper";
/// ServiceAccount (in the operator namespace) whose short-lived tokens azure-cloud-node-manager runs with on Azure
/// hosts: it may update Nodes (taints, provider ID, labels) and patch their status, which NodeRestriction forbids
/// the kubelet's node identity for its own taints.
pub const CLOUD_NODE_MANAGER_SERVICE_ACCOUNT: &str = "cloud-node-manager";
