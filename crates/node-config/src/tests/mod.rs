//! Flow tests: `configure` and `deconfigure` against the fake Windows host of [`fake_host`] and the in-memory
//! cluster fakes of `wmco-cluster-client`, asserting the commands sent (by kind, in order), the host's resulting
//! state and the records written; and against `winhost-sim`'s host model ([`simulator`]), which interprets the
//! commands generically.

pub(crate) mod fake_host;
mod first_contact;
mod flows;
mod simulator;
