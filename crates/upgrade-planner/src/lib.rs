//! Pure decision of which Windows instances to configure, upgrade, rekey or deconfigure, within a budget.
//!
//! This crate will own `plan(&Fleet, &Policy) -> Plan`. It is built under issue #3; until then it holds nothing.
