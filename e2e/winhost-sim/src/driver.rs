//! Each host's background driver: advances service states on the host's clock and reacts to service processes
//! starting and stopping.

use std::sync::Arc;
use std::time::Duration;

use crate::ssh::{SshServer, lock};

/// How often the driver looks at its host.
const TICK: Duration = Duration::from_millis(50);

/// Starts the driver of `server`'s host; it ends when the server is dropped.
pub fn spawn(server: Arc<SshServer>) {
    let weak = Arc::downgrade(&server);
    drop(server);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(TICK).await;
            let Some(server) = weak.upgrade() else { return };
            let mut host = lock(&server.host);
            host.refresh();
            host.process_events.clear();
        }
    });
}
