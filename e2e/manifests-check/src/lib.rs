//! Holds no code: this package exists for its integration test `tests/manifests.rs`, which applies the kustomize
//! overlays under `manifests/overlays/` (OpenShift, then plain Kubernetes) to the e2e control plane with `kubectl apply -k`
//! and proves that the operator's ServiceAccount gets exactly the least-privilege access `docs/install.md`
//! describes, and that Azure's cloud-node-manager credential removes the uninitialized taint its Node's kubelet may
//! not. Run it with `cargo test -p wmco-manifests-check` after `cargo xtask controlplane build`. Its second
//! test, `tests/service_monitors.rs`, needs nothing running: every label the ServiceMonitors relabel from is one
//! Prometheus sets for their service discovery role.
