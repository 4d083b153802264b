//! Typed access to every Kubernetes and OpenShift object the wmco operator touches.
//!
//! This crate will own the `WindowsInstance` custom resource, the OpenShift types the operator reads, and small
//! capability traits (nodes, drain, CSRs, events, secrets, tokens, cluster facts) with a real implementation over
//! `kube` and an in-memory fake. It is built under issue #8; until then it holds nothing.
