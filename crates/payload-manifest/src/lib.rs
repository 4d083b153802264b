//! The Windows node payload: its manifest, its verification, and the configuration files rendered for a host.
//!
//! This crate will own `payload/manifest.yaml` parsing, payload verification against `sha256sum`, and the pure
//! renderers of kubelet, kube-proxy, containerd, CNI and kubeconfig files. It is built under issue #3; until then it
//! holds nothing.
