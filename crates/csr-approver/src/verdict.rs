//! The outcome of a decision: approve, deny (in scope and statically wrong) or ignore (leave pending), with the rule
//! that decided and a one-line reason.

use serde::Serialize;

use crate::RuleId;

/// What the approver does with one CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every rule passed: approve through `/approval`.
    Approve,
    /// An in-scope request broke a static rule that cannot become true later: deny it.
    Deny {
        /// The rule that failed.
        rule: RuleId,
        /// One line saying what was wrong, naming the offending value.
        reason: String,
    },
    /// The request is out of scope, or a state rule does not hold yet: leave it pending.
    Ignore {
        /// The rule that failed.
        rule: RuleId,
        /// One line saying why it is left alone.
        reason: String,
    },
}

/// The machine-readable form of a verdict: `{"verdict":"approve|deny|ignore","rule":"E3"|null,"reason":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerdictReport {
    /// `approve`, `deny` or `ignore`.
    pub verdict: &'static str,
    /// The deciding rule; `None` (JSON `null`) for an approval.
    pub rule: Option<RuleId>,
    /// One line explaining the verdict.
    pub reason: String,
}

/// The reason given with an approval.
pub const APPROVE_REASON: &str = "every rule A1-F4 passed";

/// The words of a rule F1 reason for a bootstrap request created outside its record's bootstrap window, before the
/// window's bounds.
pub(crate) const OUTSIDE_BOOTSTRAP_WINDOW: &str = "outside the bootstrap window";

impl Verdict {
    /// The deciding rule, or `None` for an approval.
    pub fn rule(&self) -> Option<RuleId> {
        match self {
            Self::Approve => None,
            Self::Deny { rule, .. } | Self::Ignore { rule, .. } => Some(*rule),
        }
    }

    /// `approve`, `deny` or `ignore`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny { .. } => "deny",
            Self::Ignore { .. } => "ignore",
        }
    }

    /// The one-line reason; for an approval, [`APPROVE_REASON`].
    pub fn reason(&self) -> &str {
        match self {
            Self::Approve => APPROVE_REASON,
            Self::Deny { reason, .. } | Self::Ignore { reason, .. } => reason,
        }
    }

    /// Whether this leaves a bootstrap request pending because it was created outside its record's bootstrap
    /// window (rule F1): the one F1 outcome an admin must hear of, since that request is never approved.
    ///
    /// ```
    /// use wmco_csr_approver::{RuleId, Verdict};
    /// let late = Verdict::Ignore {
    ///     rule: RuleId::F1,
    ///     reason: "created 2026-11-22T03:00:00Z, outside the bootstrap window 2026-11-22T00:00:00Z .. \
    ///              2026-11-22T02:00:00Z of win-1".into(),
    /// };
    /// assert!(late.is_outside_bootstrap_window());
    /// assert!(!Verdict::Ignore { rule: RuleId::F1, reason: "Node win-1 already exists".into() }.is_outside_bootstrap_window());
    /// ```
    pub fn is_outside_bootstrap_window(&self) -> bool {
        matches!(self, Self::Ignore { rule: RuleId::F1, reason } if reason.contains(OUTSIDE_BOOTSTRAP_WINDOW))
    }

    /// The verdict as a serializable report.
    ///
    /// ```
    /// use wmco_csr_approver::{RuleId, Verdict};
    /// let verdict = Verdict::Deny { rule: RuleId::E2, reason: "expirationSeconds 60 is below 600".into() };
    /// let report = verdict.report();
    /// assert_eq!((report.verdict, report.rule), ("deny", Some(RuleId::E2)));
    /// ```
    pub fn report(&self) -> VerdictReport {
        VerdictReport { verdict: self.kind(), rule: self.rule(), reason: self.reason().to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_report_has_null_rule() {
        let json = serde_json::to_value(Verdict::Approve.report()).unwrap();
        assert_eq!(json, serde_json::json!({"verdict": "approve", "rule": null, "reason": APPROVE_REASON}));
    }

    #[test]
    fn ignore_report_names_rule() {
        let verdict = Verdict::Ignore { rule: RuleId::F4, reason: "too old".into() };
        let json = serde_json::to_value(verdict.report()).unwrap();
        assert_eq!(json, serde_json::json!({"verdict": "ignore", "rule": "F4", "reason": "too old"}));
    }
}
