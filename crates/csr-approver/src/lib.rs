//! Strict, explainable approval decisions for kubelet certificate signing requests.
//!
//! This crate will own the pure decision `decide(&CsrFacts, &World) -> Verdict` over the rules of csr-rules.md. It
//! is built under issue #5; until then it holds nothing.
