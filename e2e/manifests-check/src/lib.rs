//! Holds no code: this package exists for its integration tests. `tests/manifests.rs` applies the kustomize overlays
//! under `manifests/overlays/` (OpenShift, then plain Kubernetes; and plain Kubernetes alone on a bare control plane)
//! to the e2e control plane with `kubectl apply -k` and proves that the operator's ServiceAccount gets exactly the
//! least-privilege access `docs/install.md` describes, and that Azure's cloud-node-manager credential removes the
//! uninitialized taint its Node's kubelet may not; run it with `cargo test -p wmco-manifests-check` after
//! `cargo xtask controlplane build`. The others need no control plane: `tests/service_monitors.rs` (every label the
//! ServiceMonitors relabel from is one Prometheus sets for their service discovery role), `tests/csv_features.rs`
//! (the CSV's feature annotations, pinned next to their evidence) and `tests/prometheus_rules.rs` (the recording rules
//! and alerts under `promtool test rules`, after `bash e2e/promtool/build.sh`).
