//! The one unavailability budget of a process: the lock held while it is handed out and the Windows Machines
//! source whose Machines away from the fleet are taken off it.

use std::sync::Arc;

use tokio::sync::Mutex as AsyncMutex;

use wmco_cluster_client::WindowsMachines;

/// What the budget's two authorities of one process share (the fleet controller and the instances controller's
/// [`BudgetedDisruptions`](super::BudgetedDisruptions), until the latter's grants move into the fleet controller,
/// issue 37): the lock held while the budget is handed out and the Windows Machines source whose Machines away from
/// the fleet are taken off it. Build it once per leadership term.
///
/// ```
/// use std::sync::Arc;
/// use wmco_cluster_client::NoWindowsMachines;
/// use wmco_operator::fleet::SharedBudget;
/// let budget = SharedBudget::new(Arc::new(NoWindowsMachines));
/// let copy = budget.clone();
/// assert!(Arc::ptr_eq(&budget.lock, &copy.lock));
/// ```
#[derive(Clone)]
pub struct SharedBudget {
    /// Held from reading the fleet until the budget handed out is claimed (Nodes marked, Machines deleted).
    pub lock: Arc<AsyncMutex<()>>,
    /// Lists the Windows Machines ([`NoWindowsMachines`](wmco_cluster_client::NoWindowsMachines) on plain Kubernetes).
    pub windows_machines: Arc<dyn WindowsMachines>,
}

impl SharedBudget {
    /// A fresh lock over `windows_machines`.
    pub fn new(windows_machines: Arc<dyn WindowsMachines>) -> Self {
        SharedBudget { lock: Arc::default(), windows_machines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_cluster_client::NoWindowsMachines;

    #[tokio::test]
    async fn clones_share_one_lock_and_fresh_budgets_do_not() {
        let budget = SharedBudget::new(Arc::new(NoWindowsMachines));
        let copy = budget.clone();
        let held = budget.lock.lock().await;
        assert!(copy.lock.try_lock().is_err(), "a clone hands out the same budget");
        assert!(SharedBudget::new(Arc::new(NoWindowsMachines)).lock.try_lock().is_ok());
        drop(held);
        assert!(copy.lock.try_lock().is_ok());
    }
}
