//! What this binary is: the crate version and the git revision it was built
//! from (stamped by build.rs).

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
pub(crate) const REVISION: &str = env!("FAILOVER_AGENT_REVISION");
